import Foundation
@testable import Bookstore
import BookstoreModels
import StructPostgres
import Testing

/// `stores` stores x `booksPerStore` books x `reviewsPerBook` reviews, authors shared between books.
func makeGraph(stores: Int, booksPerStore: Int, reviewsPerBook: Int, authors: Int) -> [StoreModel] {
    let authorList = (0..<authors).map { AuthorModel(uuid: UUID(), name: "Author \($0)") }
    let start = Date(timeIntervalSince1970: 1_700_000_000)
    return (0..<stores).map { s in
        let books = (0..<booksPerStore).map { b -> BookModel in
            let id = UUID()
            let reviews = (0..<reviewsPerBook).map { r in
                ReviewModel(
                    uuid: UUID(), bookID: id, content: "review \(r) of \(s)/\(b)",
                    createdAt: start.addingTimeInterval(Double(r * 60)), userID: nil)
            }
            return BookModel(
                uuid: id, title: String(format: "Title %03d-%02d", s, b), price: Double(b) + 0.5, publisher: b % 3 == 0 ? nil : "Pub",
                author: authorList[(s * booksPerStore + b) % authors], reviews: reviews)
        }
        return StoreModel(uuid: UUID(), brand: String(format: "Store %03d", s), books: books)
    }
}

/// The SQL of data statements, catalog reads left out.
func dataStatements(_ log: StatementLog) -> [String] {
    log.all.filter {
        !$0.contains("pg_catalog") && !$0.contains("pg_attribute") && !$0.contains("pg_constraint")
            && !$0.contains("pg_index") && !$0.contains("to_regclass")
    }
}

@Suite struct RelationshipGraphTests {
    @Test func aGraphIsWrittenWithOneStatementPerTableAndReadWithOneQueryPerRelationship() async throws {
        try await withBookstore { service, log in
            try await service.update(entities: makeGraph(stores: 1, booksPerStore: 1, reviewsPerBook: 1, authors: 1))
            _ = try await service.fetch(StoreModel.self)
            let graph = makeGraph(stores: 100, booksPerStore: 20, reviewsPerBook: 5, authors: 200)
            log.reset()

            let result = try await service.update(entities: graph)
            #expect(log.all.first == "BEGIN" && log.all.last == "COMMIT")
            #expect(log.all.count == 7, "BEGIN, stores, authors, books, reviews, store_books, COMMIT: \(log.all)")
            let tables = log.all.dropFirst().dropLast().map { sql in
                ["authors", "books", "reviews", "stores", "store_books"].first {
                    sql.contains("INSERT INTO \"\($0)\"")
                } ?? sql
            }
            #expect(tables.suffix(1) == ["store_books"])
            #expect(tables.firstIndex(of: "authors")! < tables.firstIndex(of: "books")!)
            #expect(tables.firstIndex(of: "books")! < tables.firstIndex(of: "reviews")!)
            #expect(result.inserted == 100 + 200 + 2000 + 10_000)
            #expect(result.linked == 2000)
            #expect(result.merged == 2000 - 200, "each author is reached by 10 books and written once")
            #expect(try await rowCount("store_books", service) == 2001)

            log.reset()
            let read = try await service.fetch(
                StoreModel.self, where: .in("uuid", graph.map(\.uuid)), sortedBy: [.ascending("brand")],
                loading: .only("books.author", "books.reviews"))
            #expect(read == graph)
            let queries = dataStatements(log)
            #expect(queries.count == 4, "stores, then books, authors, reviews: \(queries)")
            #expect(queries.dropFirst().allSatisfy { $0.contains("= ANY($1::uuid[])") })
        }
    }

    @Test func loadingChoosesRelationshipsAndDepth() async throws {
        try await withBookstore { service, log in
            let graph = makeGraph(stores: 2, booksPerStore: 3, reviewsPerBook: 2, authors: 2)
            try await service.update(entities: graph)
            _ = try await service.fetch(StoreModel.self)
            log.reset()

            let flat = try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")], loading: .none)
            #expect(flat.map(\.books) == [nil, nil])
            #expect(dataStatements(log).count == 1)

            log.reset()
            let shallow = try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")], loading: .only("books"))
            #expect(shallow[0].books?.map(\.uuid) == graph[0].books?.map(\.uuid))
            #expect(shallow[0].books?.allSatisfy { $0.author == nil && $0.reviews == nil } == true)
            #expect(dataStatements(log).count == 2)

            log.reset()
            let authored = try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")], loading: .only("books.author"))
            #expect(authored[1].books?.map(\.author) == graph[1].books?.map(\.author))
            #expect(authored[1].books?.allSatisfy { $0.reviews == nil } == true)
            #expect(dataStatements(log).count == 3)

            let depthOne = try await service.fetch(StoreModel.self, loading: .all(depth: 1))
            #expect(depthOne.allSatisfy { $0.books?.allSatisfy { $0.author == nil } == true })

            let error = await #expect(throws: StructPostgresError.self) {
                try await service.fetch(StoreModel.self, loading: .only("books.writer"))
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(
                error?.message == "cannot load 'writer': BookEntity has no relationship of that name; its relationships are author, reviews"
            )
        }
    }

    /// A plain fetch loads the configured default: three levels unless set, one query when set to `.none`; each
    /// level costs one query per relationship, whatever the rows.
    @Test func aPlainFetchLoadsTheConfiguredDefault() async throws {
        let graph = makeGraph(stores: 3, booksPerStore: 4, reviewsPerBook: 2, authors: 2)
        try await withBookstore { service, log in
            try await service.update(entities: graph)
            _ = try await service.fetch(StoreModel.self)
            log.reset()
            let whole = try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")])
            #expect(whole.map(\.books?.count) == graph.map(\.books?.count))
            #expect(whole[0].books?.first?.author != nil)
            // stores; books; the books' authors and reviews; the reviews name no user, so level three sends nothing.
            #expect(dataStatements(log).count == 4, "\(dataStatements(log))")
        }
        try await withTables(configure: { $0.defaultLoading = .none }) { service, log in
            _ = try await Migrator(service: service, migrations: try MigrationSet(directory: repositoryMigrations)).migrate()
            try await service.update(entities: graph)
            _ = try await service.fetch(StoreModel.self, loading: .threeLevels)
            log.reset()
            let flat = try await service.fetch(StoreModel.self)
            #expect(flat.count == 3 && flat.allSatisfy { $0.books == nil })
            #expect(dataStatements(log).count == 1)
            log.reset()
            let asked = try await service.fetch(StoreModel.self, loading: .all(depth: 2))
            #expect(asked.allSatisfy { $0.books?.count == 4 })
            #expect(dataStatements(log).count == 4, "stores; books; authors and reviews")
        }
    }

    @Test func anEmptyResultSendsNoRelationshipQueries() async throws {
        try await withBookstore { service, log in
            let none = try await service.fetch(StoreModel.self)
            #expect(none.isEmpty)
            #expect(dataStatements(log).count == 1)
        }
    }

    /// More than one statement's worth of registrations of one table (250 stores sharing 100 books: 12,500): the
    /// repeats are merged across the whole table before it is cut into statements, so each book is written once.
    @Test func registrationsRepeatedBeyondOneStatementAreMergedOnce() async throws {
        try await withBookstore { service, log in
            let books = (0..<100).map { BookModel(uuid: UUID(), title: "B\($0)") }
            let stores = (0..<250).map { index in
                StoreModel(uuid: UUID(), brand: "S\(index)", books: (0..<50).map { books[(index * 7 + $0) % 100] })
            }
            log.reset()
            let result = try await service.update(entities: stores)
            #expect(result.inserted == 350)
            #expect(result.merged == 12_400)
            #expect(result.updated == 0 && result.unchanged == 0)
            #expect(log.all.count { $0.contains(#"INSERT INTO "books""#) } == 1)
            #expect(try await service.count(BookModel.self) == 100)
        }
    }

    @Test func reviewsAreFetchedByTheirBook() async throws {
        try await withBookstore { service, _ in
            let graph = makeGraph(stores: 1, booksPerStore: 2, reviewsPerBook: 3, authors: 1)
            try await service.update(entities: graph)
            let book = try #require(graph[0].books?[1])
            let reviews = try await service.fetch(
                ReviewModel.self, where: .equal("bookID", book.uuid), sortedBy: [.descending("createdAt")], limit: 50, loading: .none)
            #expect(reviews == book.reviews?.reversed())
        }
    }
}
