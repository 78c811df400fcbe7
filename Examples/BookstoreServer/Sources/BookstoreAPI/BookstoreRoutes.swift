import BookstoreModels
import Foundation
import Hummingbird
import StructPostgres

/// The book store's routes.
///
/// - `GET /health`: `ok`, and how many pooled connections requests are using.
/// - `GET /stores`: the stores with their books.
/// - `GET /books/{id}`: a book with its author and reviews (and the reviews' users), its version as the `ETag`.
/// - `PUT /books/{id}`: a changed book, written only at the version `If-Match` names (``BookEditRoutes``).
/// - `GET /books/{id}/reviews?limit=20&offset=0`: a book's reviews, newest first, a page at a time.
/// - `POST /books/{id}/reviews`: a new review (`{"content": "...", "stars": 4, "userID": "...", "uuid": "..."}`), 201.
/// - `PUT /reviews/{id}`, `DELETE /reviews/{id}`: change or remove a review.
/// - `POST /reviews/import?onError=abort|skip`: a JSON array of reviews (snake_case or exact names).
/// - `GET /books/{id}/reviews/live`: the reviews as server-sent events, now and after every change (`?events=N`
///   ends the stream after N events).
/// - `GET /books`, `GET /books/{id}/rating`, `GET /authors/books`: pages and figures (``addFiguresAndPages(to:)``).
struct BookstoreRoutes: Sendable {
    let service: PostgresService

    func add(to router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in
            try JSON.response(["status": "ok", "connectionsInUse": "\(service.connectionsInUse)"])
        }
        router.get("stores") { _, _ in
            try JSON.response(try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")], loading: .only("books")))
        }
        BookEditRoutes(service: service).add(to: router)
        router.get("books/:id/reviews") { request, context in
            let book = try await existingBook(context)
            let query = request.uri.queryParameters
            let limit = try Self.number(query.get("limit"), name: "limit", default: 20, range: 1...100)
            let offset = try Self.number(query.get("offset"), name: "offset", default: 0, range: 0...Int.max)
            let reviews = try await service.fetch(
                ReviewModel.self, where: .equal("bookID", book), sortedBy: [.descending("createdAt"), .ascending("uuid")],
                limit: limit, offset: offset, loading: .none)
            return try JSON.response(reviews)
        }
        router.post("books/:id/reviews") { request, context in
            let book = try await existingBook(context)
            let input = try await ReviewInput.decode(request, context)
            let review = ReviewModel(
                uuid: input.uuid ?? UUID(), bookID: book, content: try input.validContent(), stars: try input.validStars(), createdAt: .now,
                userID: input.userID)
            let written = try await service.update(entities: [review], options: .insertIfAbsent)
            guard written.inserted == 1 else { throw HTTPError(.conflict, message: "a review with uuid \(review.uuid) exists") }
            context.logger.info("review created", metadata: ["review": "\(review.uuid)", "book": "\(book)"])
            return try JSON.response(review, status: .created)
        }
        router.put("reviews/:id") { request, context in
            let id = try Self.uuid(context, "id")
            let input = try await ReviewInput.decode(request, context)
            guard var review = try await service.find(ReviewModel.self, id: id, loading: .none) else {
                throw HTTPError(.notFound, message: "no review \(id)")
            }
            review.content = try input.validContent()
            if let stars = try input.validStars() { review.stars = stars }
            if let user = input.userID { review.userID = user }
            try await service.update(entities: [review])
            return try JSON.response(review)
        }
        router.delete("reviews/:id") { _, context in
            let id = try Self.uuid(context, "id")
            guard try await service.deleteAll(ReviewModel.self, where: .equal("uuid", id)) == 1 else {
                throw HTTPError(.notFound, message: "no review \(id)")
            }
            return Response(status: .noContent)
        }
        router.post("reviews/import") { request, context in
            let policy: ImportOptions.FailurePolicy =
                switch request.uri.queryParameters.get("onError") ?? "abort" {
                case "abort": .allOrNothing
                case "skip": .skipAndReport
                case let other: throw HTTPError(.badRequest, message: "onError '\(other)' is not abort or skip")
                }
            let body = try await request.body.collect(upTo: 16 << 20)
            let result = try await service.import(
                ReviewModel.self, from: Data(body.readableBytesView), options: ImportOptions(keys: .snakeCase, onFailure: policy))
            return try JSON.response(ImportSummary(result))
        }
        router.get("books/:id/reviews/live") { request, context in
            let book = try await existingBook(context)
            let events = try Self.number(request.uri.queryParameters.get("events"), name: "events", default: Int.max, range: 1...Int.max)
            return LiveReviews(service: service, book: book, events: events).response(logger: context.logger)
        }
        addFiguresAndPages(to: router)
    }

    /// The `id` of the path, which must be a book that exists (404 otherwise).
    func existingBook(_ context: BasicRequestContext) async throws -> UUID {
        let id = try Self.uuid(context, "id")
        guard try await service.exists(BookModel.self, where: .equal("uuid", id)) else {
            throw HTTPError(.notFound, message: "no book \(id)")
        }
        return id
    }

    static func uuid(_ context: BasicRequestContext, _ name: String) throws -> UUID {
        let text = try context.parameters.require(name)
        guard let id = UUID(uuidString: text) else { throw HTTPError(.badRequest, message: "'\(text)' is not a uuid") }
        return id
    }

    static func number(_ text: String?, name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw HTTPError(
                .badRequest,
                message:
                    "\(name) '\(text)' is not a whole number in \(range.lowerBound)...\(range.upperBound == Int.max ? "" : "\(range.upperBound)")"
            )
        }
        return number
    }
}

/// The body of a new or changed review.
struct ReviewInput: Decodable {
    var uuid: UUID?
    var content: String?
    var stars: Int?
    var userID: UUID?

    static func decode(_ request: Request, _ context: BasicRequestContext) async throws -> ReviewInput {
        let body = try await request.body.collect(upTo: 1 << 20)
        do {
            return try JSONDecoder().decode(ReviewInput.self, from: Data(body.readableBytesView))
        } catch let error as DecodingError {
            throw HTTPError(.badRequest, message: "the body is not a review: \(JSON.describe(error))")
        }
    }

    /// The content, which must hold text and at most 2,000 characters.
    func validContent() throws -> String {
        guard let content, !content.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw HTTPError(.badRequest, message: "content: a review needs some text")
        }
        guard content.count <= 2_000 else {
            throw HTTPError(.badRequest, message: "content: at most 2,000 characters, got \(content.count)")
        }
        return content
    }

    /// The stars, one to five, when given.
    func validStars() throws -> Int? {
        guard let stars else { return nil }
        guard (1...5).contains(stars) else { throw HTTPError(.badRequest, message: "stars: one to five, got \(stars)") }
        return stars
    }
}

/// What an import did.
struct ImportSummary: Encodable {
    var records: Int
    var inserted: Int
    var updated: Int
    var unchanged: Int
    var failures: [Failure]

    struct Failure: Encodable {
        var index: Int
        var path: String
        var reason: String
    }

    init(_ result: ImportResult) {
        records = result.records
        inserted = result.written.inserted
        updated = result.written.updated
        unchanged = result.written.unchanged
        failures = result.failures.map { Failure(index: $0.index, path: $0.path, reason: $0.reason) }
    }
}

/// JSON bodies with ISO 8601 dates.
enum JSON {
    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: try encode(value))))
    }

    static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(value)
    }

    /// Where a body failed to decode, without quoting it.
    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): "missing field '\(key.stringValue)'"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' is not a \(type)"
        case .dataCorrupted(let context):
            context.codingPath.isEmpty ? "malformed JSON" : "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' is invalid"
        @unknown default: "malformed JSON"
        }
    }
}
