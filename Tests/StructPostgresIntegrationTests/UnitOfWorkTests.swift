import Foundation
import StructPostgres
import Testing

private struct Author: StoredModel, Equatable {
    static let table = "authors"
    var uuid: UUID
    var name: String
}

private struct Review: StoredModel, Equatable {
    static let table = "reviews"
    var uuid: UUID
    var bookID: UUID
    var content: String
}

/// A book that owns its reviews: its `toEntity` converts them first, so they complete before the book.
private struct ReviewedBook: Sendable {
    var uuid: UUID
    var title: String
    var author: Author?
    var reviews: [Review]
}

private struct ReviewedBookEntity: EntityProtocol {
    static let table = "books"
    var uuid: UUID
    var title: String
    var authorID: UUID?
    func toModel() -> ReviewedBook { ReviewedBook(uuid: uuid, title: title, author: nil, reviews: []) }
}

extension ReviewedBook: EntityConvertible {
    func toEntity(context: EntityContext) throws -> ReviewedBookEntity {
        for review in reviews { try context.insert(review) }
        return ReviewedBookEntity(uuid: uuid, title: title, authorID: try author.map { try context.insert($0).uuid })
    }
}

private let schema = """
    CREATE TABLE authors (uuid uuid PRIMARY KEY, name text NOT NULL);
    CREATE TABLE books (uuid uuid PRIMARY KEY, title text NOT NULL, author_id uuid REFERENCES authors (uuid) ON DELETE SET NULL);
    CREATE TABLE reviews (uuid uuid PRIMARY KEY, book_id uuid NOT NULL REFERENCES books (uuid) ON DELETE CASCADE, content text NOT NULL)
    """

@Suite struct UnitOfWorkTests {
    @Test func tablesAreWrittenInForeignKeyOrderInOneTransaction() async throws {
        try await withTables(schema) { service, log in
            let author = Author(uuid: UUID(), name: "Le Guin")
            let books = (0..<3).map { index in
                let id = UUID()
                return ReviewedBook(
                    uuid: id, title: "Book \(index)", author: author,
                    reviews: (0..<2).map { Review(uuid: UUID(), bookID: id, content: "review \($0)") })
            }
            _ = try await service.count(Author.self)
            _ = try await service.count(Review.self)
            _ = try await service.count(ReviewedBook.self)
            log.reset()
            let result = try await service.update(entities: books)
            #expect(result == UpsertResult(inserted: 1 + 3 + 6, merged: 2))
            let writes = log.all.filter { $0.hasPrefix("WITH upserted") || $0.hasPrefix("INSERT INTO") }.map { sql in
                ["authors", "books", "reviews"].first { sql.contains("INSERT INTO \"\($0)\"") } ?? sql
            }
            #expect(writes == ["authors", "books", "reviews"])
            #expect(log.all == ["BEGIN"] + log.all.dropFirst().dropLast() + ["COMMIT"])
            #expect(log.all.count == 5)  // BEGIN, one statement per table, COMMIT
            #expect(try await rowCount("reviews", service) == 6)
        }
    }

    @Test func aFailureInTheLastTableLeavesTheEarlierOnesAsTheyWere() async throws {
        try await withTables(schema, "ALTER TABLE reviews ADD CHECK (content <> 'bad')") { service, _ in
            let id = UUID()
            let book = ReviewedBook(
                uuid: id, title: "Doomed", author: Author(uuid: UUID(), name: "A"),
                reviews: [Review(uuid: UUID(), bookID: id, content: "bad")])
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [book]) }
            #expect(error?.code == .checkViolation)
            #expect(error?.table == "reviews")
            for table in ["authors", "books", "reviews"] {
                let count = try await rowCount(table, service)
                #expect(count == 0, "\(table)")
            }
        }
    }

    @Test func filtersByAListOfValuesWithOneParameter() async throws {
        try await withTables(schema) { service, log in
            let authors = (0..<5).map { Author(uuid: UUID(), name: "Author \($0)") }
            try await service.update(entities: authors)
            log.reset()
            let picked = try await service.fetch(
                Author.self, where: .in("uuid", [authors[1].uuid, authors[3].uuid, UUID()]), sortedBy: [.ascending("name")])
            #expect(picked == [authors[1], authors[3]])
            #expect(log.all.last?.contains("= ANY($1::uuid[])") == true)
            let none = try await service.count(Author.self, where: .in("uuid", [UUID]()))
            #expect(none == 0)
            let others = try await service.count(Author.self, where: !.in("name", ["Author 0", "Author 1"]))
            #expect(others == 3)
        }
    }
}
