import BookstoreModels
import StructPostgres
import StructPostgresVapor
import Vapor

/// The book store's routes, the same as the Hummingbird example's (`Examples/BookstoreServer`), plus a search at
/// `/books` (the keyset pages that example serves there are `/books/pages`):
///
/// - `GET /health`: `ok`, and how many pooled connections requests are using.
/// - `GET /stores`: the stores with their books.
/// - `GET /books?title=&author=&maxPrice=&sort=&limit=&offset=`: a search (see ``BookController/search(req:)``).
/// - `GET /books/:id`: a book with its author and reviews (and the reviews' users).
/// - `GET /books/:id/reviews?limit=20&offset=0`: a book's reviews, newest first, a page at a time.
/// - `POST /books/:id/reviews`: a new review (`{"content": "...", "stars": 4, "userID": "...", "uuid": "..."}`), 201.
/// - `PUT /reviews/:id`, `DELETE /reviews/:id`: change or remove a review.
/// - `POST /reviews/import?onError=abort|skip`: a JSON array of reviews (snake_case or exact names).
/// - `GET /books/:id/reviews/live`: the reviews as server-sent events, now and after every change (`?events=N`
///   ends the stream after N events).
/// - `GET /books/pages`, `GET /books/:id/rating`, `GET /authors/books`: keyset pages and figures (``FigureController``).
func routes(_ app: Application) throws {
    app.get("health") { req in
        ["status": "ok", "connectionsInUse": "\(req.store.connectionsInUse)"]
    }
    app.get("stores") { req in
        try await req.store.fetch(StoreModel.self, sortedBy: [.ascending("brand")], loading: .only("books"))
    }
    try app.register(collection: BookController())
    try app.register(collection: ReviewController())
    try app.register(collection: FigureController())
}

// The book store's models as Vapor content (JSON bodies, ISO 8601 dates): they are Codable structs already.
extension StoreModel: @retroactive Content {}
extension BookModel: @retroactive Content {}
extension ReviewModel: @retroactive Content {}

extension Request {
    /// The path parameter `name` as a uuid (400 when it is not one).
    func uuid(_ name: String) throws -> UUID {
        let text = try parameters.require(name)
        guard let id = UUID(uuidString: text) else { throw Abort(.badRequest, reason: "'\(text)' is not a uuid") }
        return id
    }

    /// The query parameter `name` as a whole number in `range`, `value` when absent (400 when it is not one).
    func number(_ name: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = query[String.self, at: name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            let upper = range.upperBound == Int.max ? "" : "\(range.upperBound)"
            throw Abort(.badRequest, reason: "\(name) '\(text)' is not a whole number in \(range.lowerBound)...\(upper)")
        }
        return number
    }

    /// The path's `id`, which must be a book that exists (404 otherwise).
    func existingBook() async throws -> UUID {
        let id = try uuid("id")
        guard try await store.exists(BookModel.self, where: .equal("uuid", id)) else { throw Abort(.notFound, reason: "no book \(id)") }
        return id
    }
}
