@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// Format-string predicates against a real PostgreSQL, each checked against the same test in Swift.
@Suite struct PredicateQueryTests {
    /// 3 stores x 4 books x 2 reviews; every third book has no publisher; authors alternate, the last book has none.
    private func seed(_ service: PostgresService) async throws -> [StoreModel] {
        var graph = makeGraph(stores: 3, booksPerStore: 4, reviewsPerBook: 2, authors: 2)
        graph[2].books![3].author = nil
        graph[1].books![2].title = "50% off_Sale"
        graph[0].books![1].reviews![0].content = "A GREAT read"
        try await service.update(entities: graph)
        return graph
    }

    @Test func eachOperatorReturnsTheRowsNSPredicateWould() async throws {
        try await withBookstore { service, _ in
            let graph = try await seed(service)
            let books = graph.flatMap { $0.books! }
            let author = books[0].author!
            let cases: [(String, [(any Encodable & Sendable)?], (BookModel) -> Bool)] = [
                ("publisher == 'Pub'", [], { $0.publisher == "Pub" }),
                ("publisher != 'Pub'", [], { $0.publisher != "Pub" }),
                ("NOT (publisher == 'Pub')", [], { !($0.publisher == "Pub") }),
                ("publisher == nil", [], { $0.publisher == nil }),
                ("publisher != nil AND price > 1", [], { $0.publisher != nil && $0.price! > 1 }),
                ("price < 1.5 OR price >= 3.5", [], { $0.price! < 1.5 || $0.price! >= 3.5 }),
                ("price <= %f", [1.5], { $0.price! <= 1.5 }),
                ("price BETWEEN {1, 3}", [], { (1...3).contains($0.price!) }),
                ("NOT price BETWEEN %@", [[1.0, 3.0]], { !(1...3).contains($0.price!) }),
                ("title BEGINSWITH 'Title 001'", [], { $0.title!.hasPrefix("Title 001") }),
                ("title ENDSWITH[c] '-03'", [], { $0.title!.hasSuffix("-03") }),
                ("title CONTAINS '% off_'", [], { $0.title!.contains("% off_") }),
                ("title CONTAINS[c] 'SALE'", [], { $0.title!.lowercased().contains("sale") }),
                ("title LIKE 'Title 00?-0*'", [], { $0.title!.hasPrefix("Title 00") && $0.title!.count == 12 }),
                ("title ==[c] 'title 000-00'", [], { $0.title!.lowercased() == "title 000-00" }),
                ("uuid IN %@", [[books[1].uuid, books[5].uuid]], { [books[1].uuid, books[5].uuid].contains($0.uuid) }),
                ("NOT uuid IN %@", [[books[1].uuid]], { $0.uuid != books[1].uuid }),
                ("%K == %@", ["publisher", "Pub"], { $0.publisher == "Pub" }),
                ("publisher IN {nil, 'Pub'}", [], { $0.publisher == nil || $0.publisher == "Pub" }),
                ("NOT publisher IN {nil, 'x'}", [], { !($0.publisher == nil || $0.publisher == "x") }),
                ("title <[c] 'title 001'", [], { $0.title!.lowercased() < "title 001" }),
                ("TRUEPREDICATE", [], { _ in true }),
                ("FALSEPREDICATE", [], { _ in false }),
                ("author.name == %@", [author.name], { $0.author?.name == author.name }),
                ("author.name != %@", [author.name], { $0.author?.name != author.name }),
                ("author.name == nil", [], { $0.author == nil }),
                ("ANY reviews.content CONTAINS[c] 'great'", [], { $0.reviews!.contains { $0.content!.lowercased().contains("great") } }),
                ("NONE reviews.content CONTAINS[c] 'great'", [], { !$0.reviews!.contains { $0.content!.lowercased().contains("great") } }),
                ("ALL reviews.content BEGINSWITH 'review'", [], { $0.reviews!.allSatisfy { $0.content!.hasPrefix("review") } }),
                ("NOT ALL reviews.content BEGINSWITH 'review'", [], { !$0.reviews!.allSatisfy { $0.content!.hasPrefix("review") } }),
            ]
            for (format, arguments, expected) in cases {
                let filter = try Filter(format: format, arguments: arguments)
                let found = try await service.fetch(BookModel.self, where: EntityFilter(filter), loading: .none).map(\.uuid)
                #expect(Set(found) == Set(books.filter(expected).map(\.uuid)), "\(format)")
                #expect(found.count == books.filter(expected).count, "\(format)")
            }
        }
    }

    @Test func quantifiersGoThroughJoinTablesAndKeyPathsBeyond() async throws {
        try await withBookstore { service, _ in
            let graph = try await seed(service)
            let stores = graph
            let name = graph[0].books![0].author!.name
            let cases: [(String, [(any Encodable & Sendable)?], (StoreModel) -> Bool)] = [
                ("ANY books.price > %@", [3.0], { $0.books!.contains { $0.price! > 3 } }),
                ("ALL books.price > %@", [0.0], { $0.books!.allSatisfy { $0.price! > 0 } }),
                ("NONE books.title CONTAINS 'Sale'", [], { !$0.books!.contains { $0.title!.contains("Sale") } }),
                ("ANY books.author.name == %@", [name], { $0.books!.contains { $0.author?.name == name } }),
                ("ALL books.author.name != nil", [], { $0.books!.allSatisfy { $0.author != nil } }),
                (
                    "brand == 'Store 000' OR ANY books.title CONTAINS 'Sale'", [],
                    { $0.brand == "Store 000" || $0.books!.contains { $0.title!.contains("Sale") } }
                ),
            ]
            for (format, arguments, expected) in cases {
                let filter = try Filter(format: format, arguments: arguments)
                let found = try await service.fetch(StoreModel.self, where: EntityFilter(filter), loading: .none).map(\.uuid)
                #expect(Set(found) == Set(stores.filter(expected).map(\.uuid)), "\(format)")
            }
        }
    }

    @Test func theQueriesOfTheOriginalApps() async throws {
        try await withBookstore { service, log in
            let graph = try await seed(service)
            let book = graph[1].books![2]
            let reviews = try await service.fetch(
                ReviewModel.self, where: .format("bookID == %@", book.uuid), sortedBy: [.descending("createdAt")], limit: 50, loading: .none
            )
            #expect(reviews.map(\.uuid) == book.reviews!.reversed().map(\.uuid))
            #expect(log.all.last?.hasSuffix("ORDER BY \"created_at\" DESC LIMIT 50") == true)

            try await service.update(entities: [
                UserModel(uuid: UUID(), name: "Zoe", avatarURL: nil, role: .admin),
                UserModel(uuid: UUID(), name: "Adam", avatarURL: nil, role: .reader),
                UserModel(uuid: UUID(), name: "Bea", avatarURL: nil, role: .admin),
                UserModel(uuid: UUID(), name: "Cid", avatarURL: nil, role: .critic),
            ])
            let users = try await service.fetch(UserModel.self, sortedBy: [SortKey("role"), SortKey("name")], loading: .none)
            #expect(users.map(\.name) == ["Bea", "Zoe", "Cid", "Adam"])
        }
    }

    @Test func pagingCountingAndExistence() async throws {
        try await withBookstore { service, _ in
            let graph = try await seed(service)
            let titles = graph.flatMap { $0.books! }.compactMap(\.title).sorted()
            let page = try await service.fetch(BookModel.self, sortedBy: [.ascending("title")], limit: 4, offset: 4, loading: .none)
            #expect(page.compactMap(\.title) == Array(titles[4..<8]))
            #expect(try await service.count(BookModel.self, where: .format("price > %@", 2.0)) == 6)
            #expect(try await service.exists(BookModel.self, where: .format("title CONTAINS 'Sale'")))
            #expect(try await service.exists(BookModel.self, where: .format("title == 'nope'")) == false)
        }
    }

    @Test func batchDeleteIsOneStatementAndCountsTheRows() async throws {
        try await withBookstore { service, log in
            _ = try await seed(service)
            log.reset()
            let deleted = try await service.deleteAll(ReviewModel.self, where: .format("content BEGINSWITH %@", "review 1"))
            #expect(deleted == 12)
            #expect(dataStatements(log).count == 1)
            #expect(try await rowCount("reviews", service) == 12)
            let cleared = try await service.deleteAll(ReviewModel.self, where: nil)
            #expect(cleared == 12)
            let books = try await service.deleteAll(BookModel.self, where: .format("author == nil"))
            #expect(books == 1)
            #expect(try await rowCount("store_books", service) == 11, "the delete rules apply")
        }
    }

    @Test func injectedSQLIsAParseErrorOrABoundValue() async throws {
        try await withBookstore { service, _ in
            _ = try await seed(service)
            let spliced = #expect(throws: StructPostgresError.self) {
                _ = try Filter(format: "title == 'x'; DROP TABLE books")
            }
            #expect(spliced?.message.hasPrefix("malformed predicate: unexpected character ';'") == true)
            let bound = try await service.fetch(BookModel.self, where: .format("title == %@", "x'; DROP TABLE books; --"), loading: .none)
            #expect(bound.isEmpty)
            let quoted = try await service.fetch(BookModel.self, where: .format("title == 'x\\'; DROP TABLE books; --'"), loading: .none)
            #expect(quoted.isEmpty)
            #expect(try await rowCount("books", service) == 12)
        }
    }

    @Test func countsOfToManyRelationshipsAndRegularExpressions() async throws {
        try await withBookstore { service, _ in
            var graph = try await seed(service)
            // Reviews per book: 2, except one with none and one with one; one store with a book fewer.
            let emptied = graph[0].books![0].uuid
            let halved = graph[1].books![1]
            _ = try await service.deleteAll(ReviewModel.self, where: .format("bookID == %@", emptied))
            _ = try await service.delete(entities: [halved.reviews![0]])
            graph[0].books![0].reviews = []
            graph[1].books![1].reviews!.removeFirst()
            let unshelved = graph[2].books!.removeLast()  // leaves the store, stays a book
            try await service.update(entities: [graph[2]])
            let books = graph.flatMap { $0.books! } + [unshelved]
            let bookCases: [(String, (BookModel) -> Bool)] = [
                ("reviews.@count == 2", { $0.reviews!.count == 2 }),
                ("reviews.@count < 2", { $0.reviews!.count < 2 }),
                (
                    "reviews.@count == 0 OR title MATCHES 'Title 00[12]-0[13]'",
                    {
                        $0.reviews!.isEmpty || $0.title!.wholeMatch(of: /Title 00[12]-0[13]/) != nil
                    }
                ),
                ("title MATCHES[c] 'title 001-.*'", { $0.title!.lowercased().hasPrefix("title 001-") }),
                ("NOT title MATCHES 'Title.*'", { !$0.title!.hasPrefix("Title") }),
                ("title MATCHES 'Title'", { $0.title == "Title" }),
                ("NOT publisher MATCHES 'P.b'", { $0.publisher != "Pub" }),
            ]
            for (format, expected) in bookCases {
                let found = try await service.fetch(BookModel.self, where: .format(format), loading: .none).map(\.uuid)
                #expect(Set(found) == Set(books.filter(expected).map(\.uuid)), "\(format)")
            }
            let stores = try await service.fetch(StoreModel.self, where: .format("books.@count > 3"), loading: .none)
            #expect(stores.map(\.uuid).sorted() == [graph[0].uuid, graph[1].uuid].sorted(), "a count through the join table")
            let typed = try await service.fetch(
                BookModel.self, where: .matches(\BookEntity.title, "TITLE 002-0[0-9]", caseInsensitive: true), loading: .none)
            #expect(Set(typed.map(\.uuid)) == Set(books.filter { $0.title!.hasPrefix("Title 002-0") }.map(\.uuid)))

            let badPattern = await #expect(throws: StructPostgresError.self) {
                _ = try await service.fetch(BookModel.self, where: .format("title MATCHES %@", "(unclosed"), loading: .none)
            }
            #expect(badPattern?.code == .invalidValue)
            let notACount = await #expect(throws: StructPostgresError.self) {
                _ = try await service.fetch(BookModel.self, where: .format("reviews.content == 'x'"), loading: .none)
            }
            #expect(notACount?.message.contains("ANY reviews.content == %@, or count it with reviews.@count") == true)
        }
    }
}
