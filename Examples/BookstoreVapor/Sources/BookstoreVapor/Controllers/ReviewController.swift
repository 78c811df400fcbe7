import BookstoreModels
import StructPostgres
import Vapor

/// Reviews: written, changed, removed, imported.
struct ReviewController: RouteCollection {
    func boot(routes: any RoutesBuilder) throws {
        routes.post("books", ":id", "reviews", use: create)
        let reviews = routes.grouped("reviews")
        reviews.put(":id", use: update)
        reviews.delete(":id", use: delete)
        reviews.on(.POST, "import", body: .collect(maxSize: "16mb"), use: importReviews)
    }

    /// `POST /books/:id/reviews`: 201 with the review; 409 when its uuid exists.
    @Sendable
    func create(req: Request) async throws -> Response {
        let book = try await req.existingBook()
        let input = try req.content.decode(ReviewInput.self)
        let review = ReviewModel(
            uuid: input.uuid ?? UUID(), bookID: book, content: try input.validContent(), stars: try input.validStars(), createdAt: .now,
            userID: input.userID)
        let written = try await req.store.update(entities: [review], options: .insertIfAbsent)
        guard written.inserted == 1 else { throw Abort(.conflict, reason: "a review with uuid \(review.uuid) exists") }
        req.logger.info("review created", metadata: ["review": "\(review.uuid)", "book": "\(book)"])
        return try await review.encodeResponse(status: .created, for: req)
    }

    /// `PUT /reviews/:id`: new content (and user); 404 for an unknown review.
    @Sendable
    func update(req: Request) async throws -> ReviewModel {
        let id = try req.uuid("id")
        let input = try req.content.decode(ReviewInput.self)
        guard var review = try await req.store.find(ReviewModel.self, id: id, loading: .none) else {
            throw Abort(.notFound, reason: "no review \(id)")
        }
        review.content = try input.validContent()
        if let stars = try input.validStars() { review.stars = stars }
        if let user = input.userID { review.userID = user }
        try await req.store.update(entities: [review])
        return review
    }

    /// `DELETE /reviews/:id`: 204; 404 for an unknown review.
    @Sendable
    func delete(req: Request) async throws -> HTTPStatus {
        let id = try req.uuid("id")
        guard try await req.store.deleteAll(ReviewModel.self, where: .equal("uuid", id)) == 1 else {
            throw Abort(.notFound, reason: "no review \(id)")
        }
        return .noContent
    }

    /// `POST /reviews/import?onError=abort|skip`: a JSON array of reviews, all or nothing, or skipping bad records.
    @Sendable
    func importReviews(req: Request) async throws -> ImportSummary {
        let policy: ImportOptions.FailurePolicy =
            switch req.query[String.self, at: "onError"] ?? "abort" {
            case "abort": .allOrNothing
            case "skip": .skipAndReport
            case let other: throw Abort(.badRequest, reason: "onError '\(other)' is not abort or skip")
            }
        let body = req.body.data.map { Data($0.readableBytesView) } ?? Data()
        let result = try await req.store.import(ReviewModel.self, from: body, options: ImportOptions(keys: .snakeCase, onFailure: policy))
        return ImportSummary(result)
    }
}

/// The body of a new or changed review.
struct ReviewInput: Content {
    var uuid: UUID?
    var content: String?
    var stars: Int?
    var userID: UUID?

    /// The content, which must hold text and at most 2,000 characters.
    func validContent() throws -> String {
        guard let content, !content.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw Abort(.badRequest, reason: "content: a review needs some text")
        }
        guard content.count <= 2_000 else { throw Abort(.badRequest, reason: "content: at most 2,000 characters, got \(content.count)") }
        return content
    }

    /// The stars, one to five, when given.
    func validStars() throws -> Int? {
        guard let stars else { return nil }
        guard (1...5).contains(stars) else { throw Abort(.badRequest, reason: "stars: one to five, got \(stars)") }
        return stars
    }
}

/// What an import did.
struct ImportSummary: Content {
    var records: Int
    var inserted: Int
    var updated: Int
    var unchanged: Int
    var failures: [Failure]

    struct Failure: Content {
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
