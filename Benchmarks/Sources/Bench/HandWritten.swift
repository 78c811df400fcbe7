import Foundation
import Logging
import PostgresNIO

/// The contender written by hand on PostgresNIO, the best way we know: the pool, `unnest` batch upserts,
/// prepared statements for single rows and point queries.
struct HandWritten {
    let client: PostgresClient
    let logger = Logger(label: "bench.hand-written")

    func upsert(_ books: some Collection<BenchBook>) async throws {
        try await client.query(Self.upsertBooks(books), logger: logger)
    }

    /// `books` in chunks of `chunk` rows, one `unnest` statement each, in one transaction.
    func upsertInChunks(_ books: [BenchBook], chunk: Int) async throws {
        try await client.withTransaction(logger: logger) { connection in
            for start in stride(from: 0, to: books.count, by: chunk) {
                try await connection.query(Self.upsertBooks(books[start..<min(books.count, start + chunk)]), logger: logger)
            }
        }
    }

    /// `books` streamed through `COPY` into a temporary staging table, then one `INSERT ... SELECT ... ON CONFLICT`,
    /// in one transaction: the alternative to chunked `unnest` that W1 measures.
    func upsertByCopy(_ books: [BenchBook]) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("CREATE TEMPORARY TABLE books_stage (LIKE books INCLUDING DEFAULTS) ON COMMIT DROP", logger: logger)
            try await connection.copyFrom(
                table: "books_stage", columns: ["uuid", "title", "price", "publisher", "author_id"], logger: logger
            ) { writer in
                var buffer = ByteBuffer()
                for (index, book) in books.enumerated() {
                    buffer.writeString("\(book.uuid.uuidString)\t\(Self.copyText(book.title))\t\(book.price)\t")
                    buffer.writeString("\(Self.copyText(book.publisher))\t\(book.authorID.uuidString)\n")
                    if index % 10_000 == 9_999 {
                        try await writer.write(buffer)
                        buffer.clear()
                    }
                }
                if buffer.readableBytes > 0 { try await writer.write(buffer) }
            }
            try await connection.query(
                """
                INSERT INTO books (uuid, title, price, publisher, author_id)
                SELECT uuid, title, price, publisher, author_id FROM books_stage
                ON CONFLICT (uuid) DO UPDATE SET title = EXCLUDED.title, price = EXCLUDED.price,
                    publisher = EXCLUDED.publisher, author_id = EXCLUDED.author_id
                """, logger: logger)
        }
    }

    /// A string in `COPY`'s text format: backslash, tab, newline and carriage return escaped.
    private static func copyText(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else { return text }
        return text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t")
            .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
    }

    static func upsertBooks(_ books: some Collection<BenchBook>) -> PostgresQuery {
        """
        INSERT INTO books (uuid, title, price, publisher, author_id)
        SELECT * FROM unnest(\(books.map(\.uuid))::uuid[], \(books.map(\.title))::text[], \(books.map(\.price))::float8[],
                             \(books.map(\.publisher))::text[], \(books.map(\.authorID))::uuid[])
        ON CONFLICT (uuid) DO UPDATE SET title = EXCLUDED.title, price = EXCLUDED.price,
            publisher = EXCLUDED.publisher, author_id = EXCLUDED.author_id
        """
    }

    /// One upsert on a connection leased for it, as a server handling one request per task does.
    func upsertOne(_ book: BenchBook) async throws {
        try await client.withConnection { try await upsertOne(book, on: $0) }
    }

    /// One upsert on a connection the caller holds: the fastest hand-written code, with no lease per call.
    func upsertOne(_ book: BenchBook, on connection: PostgresConnection) async throws {
        _ = try await connection.execute(UpsertBook(book: book), logger: logger)
    }

    /// One upsert that reports what it did, as the library's does: `true` inserted, `false` updated, `nil` unchanged
    /// (a row whose values are all the same is not rewritten).
    func upsertOneReportingOutcome(_ book: BenchBook, on connection: PostgresConnection) async throws -> Bool? {
        var inserted: Bool?
        for try await row in try await connection.execute(UpsertBookReportingOutcome(book: book), logger: logger) { inserted = row }
        return inserted
    }

    /// The reviews of a book, on a connection the caller holds.
    func reviews(of book: UUID, on connection: PostgresConnection) async throws -> [BenchReview] {
        var reviews: [BenchReview] = []
        for try await review in try await connection.execute(ReviewsOfBook(book: book), logger: logger) { reviews.append(review) }
        return reviews
    }

    func allBooks() async throws -> [BenchBook] {
        var books: [BenchBook] = []
        let rows = try await client.query("SELECT uuid, title, price, publisher, author_id FROM books", logger: logger)
        for try await (uuid, title, price, publisher, author) in rows.decode((UUID, String, Double, String, UUID).self) {
            books.append(BenchBook(uuid: uuid, title: title, price: price, publisher: publisher, authorID: author))
        }
        return books
    }

    /// Reads every row of `books` into structs one at a time; returns how many and a checksum of the prices.
    func streamBooks() async throws -> (Int, Double) {
        var (count, sum) = (0, 0.0)
        let rows = try await client.query("SELECT uuid, title, price, publisher, author_id FROM books", logger: logger)
        for try await (uuid, title, price, publisher, author) in rows.decode((UUID, String, Double, String, UUID).self) {
            let book = BenchBook(uuid: uuid, title: title, price: price, publisher: publisher, authorID: author)
            count += 1
            sum += book.price
        }
        return (count, sum)
    }

    func delete(_ ids: [UUID]) async throws {
        try await client.query("DELETE FROM books WHERE uuid = ANY(\(ids)::uuid[])", logger: logger)
    }

    func count(_ table: String) async throws -> Int {
        let rows = try await client.query("SELECT count(*) FROM \(unescaped: table)", logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    func book(_ id: UUID) async throws -> BenchBook? {
        let rows = try await client.query("SELECT uuid, title, price, publisher, author_id FROM books WHERE uuid = \(id)", logger: logger)
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

/// ``UpsertBook`` that leaves a row with the same values alone and returns whether it inserted.
struct UpsertBookReportingOutcome: PostgresPreparedStatement {
    static let sql =
        UpsertBook.sql + """

            WHERE (books.title, books.price, books.publisher, books.author_id)
                IS DISTINCT FROM (EXCLUDED.title, EXCLUDED.price, EXCLUDED.publisher, EXCLUDED.author_id)
            RETURNING (xmax = 0)
            """
    typealias Row = Bool
    let book: BenchBook

    func makeBindings() throws -> PostgresBindings { try UpsertBook(book: book).makeBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

struct ReviewsOfBook: PostgresPreparedStatement {
    static let sql = "SELECT uuid, book_id, content, created_at FROM reviews WHERE book_id = $1 ORDER BY created_at"
    typealias Row = BenchReview
    let book: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(book)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (uuid, book, content, createdAt) = try row.decode((UUID, UUID, String, Date).self)
        return BenchReview(uuid: uuid, bookID: book, content: content, createdAt: createdAt)
    }
}
