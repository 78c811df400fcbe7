import Foundation
import PostgresNIO

/// W6 by hand: one `unnest` upsert per table in one transaction; read back with one query per level.
extension HandWritten {
    func writeGraph(_ stores: [GraphStore]) async throws {
        let books = stores.flatMap { $0.books ?? [] }
        var authorsByID: [UUID: BenchAuthor] = [:]
        for book in books { if let author = book.author { authorsByID[author.uuid] = author } }
        let authors = Array(authorsByID.values)
        let reviews = books.flatMap { $0.reviews ?? [] }
        let links = stores.flatMap { store in (store.books ?? []).map { (store.uuid, $0.uuid) } }
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO authors (uuid, name) SELECT * FROM unnest(\(authors.map(\.uuid))::uuid[], \(authors.map(\.name))::text[])
                ON CONFLICT (uuid) DO UPDATE SET name = EXCLUDED.name
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO books (uuid, title, price, publisher, author_id)
                SELECT * FROM unnest(\(books.map(\.uuid))::uuid[], \(books.map(\.title))::text[], \(books.map(\.price))::float8[],
                                     \(books.map(\.publisher))::text[], \(books.map { $0.author!.uuid })::uuid[])
                ON CONFLICT (uuid) DO UPDATE SET title = EXCLUDED.title, price = EXCLUDED.price,
                    publisher = EXCLUDED.publisher, author_id = EXCLUDED.author_id
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO stores (uuid, brand) SELECT * FROM unnest(\(stores.map(\.uuid))::uuid[], \(stores.map(\.brand))::text[])
                ON CONFLICT (uuid) DO UPDATE SET brand = EXCLUDED.brand
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO reviews (uuid, book_id, content, created_at)
                SELECT * FROM unnest(\(reviews.map(\.uuid))::uuid[], \(reviews.map(\.bookID))::uuid[], \(reviews.map(\.content))::text[],
                                     \(reviews.map(\.createdAt))::timestamptz[])
                ON CONFLICT (uuid) DO UPDATE SET book_id = EXCLUDED.book_id, content = EXCLUDED.content, created_at = EXCLUDED.created_at
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO store_books (store_id, book_id) SELECT * FROM unnest(\(links.map(\.0))::uuid[], \(links.map(\.1))::uuid[])
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }

    func readGraph() async throws -> [GraphStore] {
        try await client.withConnection { connection in
            var stores: [GraphStore] = []
            for try await (uuid, brand) in try await connection.query("SELECT uuid, brand FROM stores", logger: logger).decode(
                (UUID, String).self)
            {
                stores.append(GraphStore(uuid: uuid, brand: brand, books: []))
            }
            var booksByStore: [UUID: [GraphBook]] = [:]
            var authorIDs = Set<UUID>()
            var bookIDs = Set<UUID>()
            let booksQuery: PostgresQuery = """
                SELECT sb.store_id, b.uuid, b.title, b.price, b.publisher, b.author_id
                FROM store_books sb JOIN books b ON b.uuid = sb.book_id WHERE sb.store_id = ANY(\(stores.map(\.uuid))::uuid[])
                ORDER BY b.title
                """
            var authorOf: [UUID: UUID] = [:]
            for try await (store, uuid, title, price, publisher, author) in try await connection.query(booksQuery, logger: logger)
                .decode((UUID, UUID, String, Double, String, UUID?).self)
            {
                booksByStore[store, default: []].append(GraphBook(uuid: uuid, title: title, price: price, publisher: publisher))
                if let author { authorIDs.insert(author); authorOf[uuid] = author }
                bookIDs.insert(uuid)
            }
            var authors: [UUID: BenchAuthor] = [:]
            for try await (uuid, name) in try await connection.query(
                "SELECT uuid, name FROM authors WHERE uuid = ANY(\(Array(authorIDs))::uuid[])", logger: logger
            ).decode((UUID, String).self) {
                authors[uuid] = BenchAuthor(uuid: uuid, name: name)
            }
            var reviews: [UUID: [BenchReview]] = [:]
            for try await (uuid, book, content, createdAt) in try await connection.query(
                "SELECT uuid, book_id, content, created_at FROM reviews WHERE book_id = ANY(\(Array(bookIDs))::uuid[]) ORDER BY created_at",
                logger: logger
            ).decode((UUID, UUID, String, Date).self) {
                reviews[book, default: []].append(BenchReview(uuid: uuid, bookID: book, content: content, createdAt: createdAt))
            }
            for index in stores.indices {
                stores[index].books = (booksByStore[stores[index].uuid] ?? []).map { book in
                    var book = book
                    book.author = authorOf[book.uuid].flatMap { authors[$0] }
                    book.reviews = reviews[book.uuid] ?? []
                    return book
                }
            }
            return stores
        }
    }
}
