import Foundation
import PostgresNIO

/// The contender written by hand on PostgresNIO, the best way we know: the pool, `unnest` batch upserts,
/// prepared statements for single rows.
struct HandWritten {
    let client: PostgresClient

    func upsert(_ books: [BenchBook]) async throws {
        let ids = books.map(\.uuid)
        let titles = books.map(\.title)
        let prices = books.map(\.price)
        let publishers = books.map(\.publisher)
        let authors = books.map(\.authorID)
        try await client.query("""
            INSERT INTO books (uuid, title, price, publisher, author_id)
            SELECT * FROM unnest(\(ids)::uuid[], \(titles)::text[], \(prices)::float8[], \(publishers)::text[], \(authors)::uuid[])
            ON CONFLICT (uuid) DO UPDATE SET title = EXCLUDED.title, price = EXCLUDED.price,
                publisher = EXCLUDED.publisher, author_id = EXCLUDED.author_id
            """)
    }

    func upsertOne(_ book: BenchBook) async throws {
        for try await _ in try await client.execute(UpsertBook(book: book)) {}
    }

    func delete(_ ids: [UUID]) async throws {
        try await client.query("DELETE FROM books WHERE uuid = ANY(\(ids)::uuid[])")
    }

    func count(_ table: String) async throws -> Int {
        let rows = try await client.query("SELECT count(*) FROM \(unescaped: table)")
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    func book(_ id: UUID) async throws -> BenchBook? {
        let rows = try await client.query("SELECT uuid, title, price, publisher, author_id FROM books WHERE uuid = \(id)")
        for try await (uuid, title, price, publisher, author) in rows.decode((UUID, String, Double, String, UUID).self) {
            return BenchBook(uuid: uuid, title: title, price: price, publisher: publisher, authorID: author)
        }
        return nil
    }
}

struct UpsertBook: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO books (uuid, title, price, publisher, author_id) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (uuid) DO UPDATE SET title = EXCLUDED.title, price = EXCLUDED.price,
            publisher = EXCLUDED.publisher, author_id = EXCLUDED.author_id
        """
    typealias Row = ()
    let book: BenchBook

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(book.uuid)
        bindings.append(book.title)
        bindings.append(book.price)
        bindings.append(book.publisher)
        bindings.append(book.authorID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { () }
}
