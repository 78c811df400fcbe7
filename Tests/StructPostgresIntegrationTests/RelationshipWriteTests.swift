import Foundation
@testable import Bookstore
import BookstoreModels
import StructPostgres
import Testing

/// A store whose books leave the database once no store has them any more.
private struct OwningStore: Sendable {
    let uuid: UUID
    var brand: String
    var books: [BookModel]?
}

private struct OwningStoreEntity: EntityProtocol {
    static let table = "stores"
    static let relationships: [Relationship<Self>] = [
        .toMany("books", \.$books, through: "store_books", onRemove: .deleteOrphans)
    ]
    var uuid: UUID
    var brand: String
    @Related var books: [BookEntity]
    func toModel() -> OwningStore { OwningStore(uuid: uuid, brand: brand, books: $books.loaded?.map { $0.toModel() }) }
}

extension OwningStore: EntityConvertible {
    func toEntity(context: EntityContext) throws -> OwningStoreEntity {
        var store = OwningStoreEntity(uuid: uuid, brand: brand)
        if let books { store.books = try books.map { try context.insert($0) } }
        return store
    }
}

@Suite struct RelationshipWriteTests {
    @Test func replacingABookSetDetachesExactlyTheRemovedBooks() async throws {
        try await withBookstore { service, log in
            let graph = makeGraph(stores: 2, booksPerStore: 6, reviewsPerBook: 2, authors: 3)
            try await service.update(entities: graph)
            let reviewsBefore = try await tableDigest("reviews", service)
            var store = graph[0]
            let kept = Array(store.books![..<3])
            let removed = Array(store.books![3...])
            let added = BookModel(uuid: UUID(), title: "Title 000-99", price: 1, publisher: nil, author: nil, reviews: nil)
            store.books = kept + [added]
            log.reset()

            let result = try await service.update(entities: [store])
            #expect(result.linked == 1)
            #expect(result.unlinked == 3)
            #expect(result.orphansDeleted == 0)
            #expect(log.all.filter { $0.contains("store_books") }.count == 1, "the set is replaced by one statement")

            let read = try await service.fetch(StoreModel.self, where: .equal("uuid", store.uuid))
            #expect(read[0].books?.map(\.uuid) == (kept + [added]).map(\.uuid))
            let stillThere = try await service.count(BookModel.self, where: .in("uuid", removed.map(\.uuid)))
            #expect(stillThere == 3, "removed books keep existing")
            #expect(try await tableDigest("reviews", service) == reviewsBefore, "their reviews are untouched")
            let other = try await service.fetch(StoreModel.self, where: .equal("uuid", graph[1].uuid))
            #expect(other[0].books?.map(\.uuid) == graph[1].books?.map(\.uuid), "other stores' sets are untouched")
        }
    }

    @Test func anUnloadedSetIsLeftAloneAndAnEmptySetClearsIt() async throws {
        try await withBookstore { service, _ in
            let graph = makeGraph(stores: 1, booksPerStore: 4, reviewsPerBook: 0, authors: 1)
            try await service.update(entities: graph)
            var flat = try await service.fetch(StoreModel.self, loading: .none)[0]
            #expect(flat.books == nil)
            flat.brand = "Renamed"
            let untouched = try await service.update(entities: [flat])
            #expect(untouched.unlinked == 0)
            #expect(try await rowCount("store_books", service) == 4)

            flat.books = []
            let cleared = try await service.update(entities: [flat])
            #expect(cleared.unlinked == 4)
            #expect(try await rowCount("store_books", service) == 0)
            #expect(try await rowCount("books", service) == 4)
        }
    }

    @Test func orphansAreDeletedWhereTheRelationshipSaysSo() async throws {
        try await withBookstore { service, _ in
            let graph = makeGraph(stores: 2, booksPerStore: 3, reviewsPerBook: 1, authors: 1)
            try await service.update(entities: graph)
            let shared = graph[1].books![0]
            var first = OwningStore(uuid: graph[0].uuid, brand: graph[0].brand, books: graph[0].books! + [shared])
            try await service.update(entities: [first])

            first.books = [graph[0].books![0]]
            let result = try await service.update(entities: [first])
            #expect(result.unlinked == 3)
            #expect(result.orphansDeleted == 2, "the shared book is still in the other store")
            let remaining = try await service.count(BookModel.self, where: .in("uuid", (graph[0].books! + [shared]).map(\.uuid)))
            #expect(remaining == 2)
            #expect(try await rowCount("reviews", service) == 4, "the orphans' reviews cascade")
        }
    }

    @Test func deleteRulesOfTheMigrationsAreHonoured() async throws {
        try await withBookstore { service, log in
            let graph = makeGraph(stores: 2, booksPerStore: 3, reviewsPerBook: 2, authors: 2)
            try await service.update(entities: graph)
            let author = try #require(graph[0].books?[0].author)

            let deletedAuthors = try await service.delete(entities: [author])
            #expect(deletedAuthors == 1)
            let orphaned = try await service.fetch(BookModel.self, where: .isNull("authorID"))
            #expect(orphaned.count == 3, "books of the deleted author have no author")
            #expect(orphaned.allSatisfy { $0.author == nil })
            #expect(try await rowCount("books", service) == 6)

            log.reset()
            let deletedStores = try await service.delete(entities: [graph[0]])
            #expect(deletedStores == 1)
            #expect(dataStatements(log).count == 1, "one call, one statement: \(log.all)")
            #expect(try await rowCount("store_books", service) == 3, "the store's join rows went")
            #expect(try await rowCount("books", service) == 6, "its books stay")

            let book = try #require(graph[1].books?[0])
            try await service.delete(entities: [book])
            #expect(try await rowCount("reviews", service) == 10, "a book's reviews cascade")
            #expect(try await rowCount("store_books", service) == 2)
        }
    }

    @Test func aBookWhoseAuthorExistsNowhereIsRefusedAndNothingIsWritten() async throws {
        try await withBookstore { service, _ in
            let author = AuthorModel(uuid: UUID(), name: "Stored")
            try await service.update(entities: [author])
            let missing = UUID()
            let books = [
                FlatBook(uuid: UUID(), title: "Fine", price: 1, authorID: author.uuid),
                FlatBook(uuid: UUID(), title: "Dangling", price: 2, authorID: missing),
            ]
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: books) }
            #expect(error?.code == .foreignKeyViolation)
            #expect(error?.relationship == "FlatBook.author")
            #expect(error?.column == "author_id")
            #expect(error?.property == "authorID")
            #expect(
                error?.message
                    == "relationship FlatBook.author: author_id=\(missing.uuidString.lowercased()) is neither in this batch nor in table 'authors'; nothing was written"
            )
            #expect(try await rowCount("books", service) == 0)
        }
    }

    @Test func aDanglingKeyInsideAGraphRollsBackEveryTable() async throws {
        try await withBookstore { service, _ in
            var graph = makeGraph(stores: 1, booksPerStore: 2, reviewsPerBook: 2, authors: 1)
            let missing = UUID()
            graph[0].books![1].reviews![1].userID = missing
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: graph) }
            #expect(error?.relationship == "ReviewModel.user")
            #expect(
                error?.message.contains("user_id=\(missing.uuidString.lowercased()) is neither in this batch nor in table 'users'") == true)
            for table in ["stores", "authors", "books", "reviews", "store_books"] {
                let count = try await rowCount(table, service)
                #expect(count == 0, "\(table)")
            }
        }
    }

    /// Each table's rows are encoded while the previous table is written: a value refused by the checks in a
    /// later table still fails the call, names the row, and leaves every table empty.
    @Test func aValueRefusedInALaterTableRollsBackTheTablesAlreadySent() async throws {
        try await withBookstore { service, _ in
            var graph = makeGraph(stores: 2, booksPerStore: 3, reviewsPerBook: 2, authors: 2)
            graph[1].books![2].reviews![1].content = "nul\u{0}byte"
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: graph) }
            #expect(error?.code == .invalidValue)
            #expect(error?.table == "reviews")
            #expect(error?.message.contains("NUL byte") == true)
            for table in ["stores", "authors", "books", "reviews", "store_books"] {
                let count = try await rowCount(table, service)
                #expect(count == 0, "\(table)")
            }
        }
    }

    @Test func aFailureInTheLastTableLeavesEveryEarlierTableAsItWas() async throws {
        try await withBookstore { service, log in
            var graph = makeGraph(stores: 2, booksPerStore: 3, reviewsPerBook: 2, authors: 2)
            try await service.update(entities: graph)
            let forbidden = UUID()
            try await service.execute(unsafeSQL: "ALTER TABLE store_books ADD CONSTRAINT no_forbidden CHECK (book_id <> '\(forbidden)')")
            let tables = ["stores", "authors", "books", "reviews", "store_books"]
            var before: [String] = []
            for table in tables { before.append(try await tableDigest(table, service)) }

            graph[0].brand = "Changed"
            graph[0].books![0].title = "Changed"
            graph[0].books![0].author!.name = "Changed"
            graph[0].books![0].reviews![0].content = "Changed"
            graph[1].books!.append(BookModel(uuid: forbidden, title: "Forbidden", price: 1, publisher: nil, author: nil, reviews: nil))
            log.reset()
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: graph) }
            #expect(error?.code == .checkViolation)
            #expect(error?.table == "store_books")
            #expect(error?.relationship == "StoreEntity.books")
            #expect(log.all.last == "ROLLBACK")
            var after: [String] = []
            for table in tables { after.append(try await tableDigest(table, service)) }
            #expect(after == before)
        }
    }

    @Test func usersInvitingEachOtherAreWrittenInOneBatchAndLoadedLevelByLevel() async throws {
        try await withBookstore { service, log in
            let (ann, bob, cleo) = (UUID(), UUID(), UUID())
            let users = [
                UserModel(uuid: ann, name: "Ann", avatarURL: nil, role: .reader, invitedByID: bob),
                UserModel(uuid: bob, name: "Bob", avatarURL: nil, role: .reader, invitedByID: ann),
                UserModel(uuid: cleo, name: "Cleo", avatarURL: nil, role: .reader, invitedByID: ann),
            ]
            log.reset()
            let result = try await service.update(entities: users)
            #expect(result.inserted == 3)
            #expect(dataStatements(log).count == 1, "a cycle inside one table needs no second statement")

            _ = try await service.fetch(UserModel.self, loading: .none)
            log.reset()
            let read = try await service.fetch(UserModel.self, where: .equal("uuid", cleo), loading: .only("invitedBy.invitedBy.invitedBy"))
            #expect(read[0].invitedBy?.name == "Ann")
            #expect(read[0].invitedBy?.invitedBy?.name == "Bob")
            #expect(read[0].invitedBy?.invitedBy?.invitedBy?.name == "Ann")
            #expect(read[0].invitedBy?.invitedBy?.invitedBy?.$invitedBy.isLoaded == false)
            #expect(dataStatements(log).count == 4)

            try await service.delete(entities: [users[0]])
            let left = try await service.fetch(UserModel.self, sortedBy: [.ascending("name")], loading: .none)
            #expect(left.map(\.name) == ["Bob", "Cleo"])
            #expect(left.allSatisfy { $0.invitedByID == nil }, "ON DELETE SET NULL")
        }
    }
}

private struct Shelf: StoredModel {
    static let table = "shelves"
    static let relationships: [Relationship<Self>] = [.toOne("store", \.$store)]
    let uuid: UUID
    var storeID: UUID?
    @Related var store: StoreEntity?
}

private struct TwoWayUser: StoredModel {
    static let table = "pals"
    static let relationships: [Relationship<Self>] = [.toOne("friend", \.$friend)]
    let uuid: UUID
    var bestID: UUID?
    var worstID: UUID?
    @Related var friend: TwoWayUser?
}

@Suite struct RelationshipDeclarationTests {
    @Test func aRelationshipWithoutForeignKeyAsksForOne() async throws {
        try await withTables(
            "CREATE TABLE stores (uuid uuid PRIMARY KEY, brand text NOT NULL)",
            "CREATE TABLE shelves (uuid uuid PRIMARY KEY, store_id uuid)"
        ) { service, _ in
            // Refused before any row exists too: a test on empty tables finds the mistake.
            let empty = await #expect(throws: StructPostgresError.self) { try await service.fetch(Shelf.self) }
            #expect(
                empty?.message
                    == "relationship Shelf.store: table 'shelves' has no foreign key to 'stores'; declare one in a migration or name the column with column:"
            )
            try await service.update(entities: [Shelf(uuid: UUID(), storeID: UUID())])
            let error = await #expect(throws: StructPostgresError.self) { try await service.fetch(Shelf.self) }
            #expect(error?.code == .invalidConfiguration)
            #expect(
                error?.message
                    == "relationship Shelf.store: table 'shelves' has no foreign key to 'stores'; declare one in a migration or name the column with column:"
            )
        }
    }

    @Test func twoForeignKeysToTheSameTableNeedTheColumnNamed() async throws {
        try await withTables(
            "CREATE TABLE pals (uuid uuid PRIMARY KEY, best_id uuid REFERENCES pals, worst_id uuid REFERENCES pals)"
        ) { service, _ in
            try await service.update(entities: [TwoWayUser(uuid: UUID())])
            let error = await #expect(throws: StructPostgresError.self) { try await service.fetch(TwoWayUser.self) }
            #expect(
                error?.message
                    == "relationship TwoWayUser.friend: table 'pals' has 2 foreign keys to 'pals' (best_id, worst_id); name the one to use with column:"
            )
        }
    }
}
