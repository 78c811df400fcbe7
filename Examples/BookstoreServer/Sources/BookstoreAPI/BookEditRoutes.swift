import BookstoreModels
import Foundation
import Hummingbird
import StructPostgres

/// A book read with its version and written only at the version read: HTTP's conditional requests over the
/// library's versioned writes (``BookRecord``).
///
/// - `GET /books/{id}`: the book with its author and reviews, and `ETag: "<version>"`.
/// - `PUT /books/{id}` with `If-Match: "<version>"`: changes title, price, publisher and author (`{"title": "...",
///   "price": 9.5, "publisher": "...", "authorID": "..."}`) only if the book is still at that version: 200 with the
///   new `ETag`, or `412 Precondition Failed` with the stored version's `ETag` when someone changed it since (or no
///   such book exists). `If-None-Match: *` creates the book instead (201), 412 when it exists.
/// - `PUT` with neither header is refused with `428 Precondition Required`: a write that did not say which version it
///   read could undo a change it never saw. `If-Match: *` is refused the same way.
struct BookEditRoutes: Sendable {
    let service: PostgresService

    func add(to router: Router<BasicRequestContext>) {
        router.get("books/:id") { _, context in try await book(try BookstoreRoutes.uuid(context, "id")) }
        router.put("books/:id") { request, context in
            let id = try BookstoreRoutes.uuid(context, "id")
            let version = try Self.version(readBy: request)
            let input = try await BookInput.decode(request)
            let record = BookRecord(
                uuid: id, title: input.title, price: try input.validPrice(), publisher: input.publisher, authorID: input.authorID,
                version: version)
            let result: UpsertResult
            do {
                result = try await service.update(entities: [record])
            } catch let error as StructPostgresError where error.code == .versionConflict {
                let stored = error.conflicts.first?.storedVersion
                context.logger.info(
                    "book changed since it was read", metadata: ["book": "\(id)", "read": "\(version)", "stored": "\(stored ?? 0)"])
                var response = try JSON.response(
                    ["error": ["message": stored == nil ? "no book \(id)" : "book \(id) changed since it was read: read again and retry"]],
                    status: .preconditionFailed)
                if let stored { response.headers[.eTag] = Self.eTag(stored) }
                return response
            }
            var written = record
            written.version = try result.version(of: record)  // the struct brought up to date, no second query
            var response = try JSON.response(written, status: version == 0 ? .created : .ok)
            response.headers[.eTag] = Self.eTag(written.version)
            return response
        }
    }

    /// The book with its author and reviews, and its version as the `ETag`. The version is read first: should a change
    /// land between the two reads, the tag is older than the body and a `PUT` with it is refused, never the reverse.
    private func book(_ id: UUID) async throws -> Response {
        guard let version = try await service.find(BookRecord.self, id: id)?.version,
            let book = try await service.find(BookModel.self, id: id)
        else { throw HTTPError(.notFound, message: "no book \(id)") }
        var response = try JSON.response(book)
        response.headers[.eTag] = Self.eTag(version)
        return response
    }

    static func eTag(_ version: Int) -> String { "\"\(version)\"" }

    /// The version a `PUT` says it read: `If-Match: "3"` (a weak `W/"3"` too), or 0 with `If-None-Match: *` (the
    /// book must not exist yet).
    static func version(readBy request: Request) throws -> Int {
        if request.headers[.ifNoneMatch]?.trimmingCharacters(in: .whitespaces) == "*" { return 0 }
        guard let tag = request.headers[.ifMatch]?.trimmingCharacters(in: .whitespaces), tag != "*" else {
            throw HTTPError(
                .preconditionRequired,
                message:
                    "send If-Match with the ETag of GET /books/{id} (or If-None-Match: * to create the book): a write must say which version it read"
            )
        }
        let quoted = tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
        guard quoted.count > 2, quoted.hasPrefix("\""), quoted.hasSuffix("\""), let version = Int(quoted.dropFirst().dropLast()),
            version > 0
        else {
            throw HTTPError(.badRequest, message: "If-Match '\(tag)' is not one ETag of this server")
        }
        return version
    }
}

/// The body of a changed book.
struct BookInput: Decodable {
    var title: String?
    var price: Double?
    var publisher: String?
    var authorID: UUID?

    static func decode(_ request: Request) async throws -> BookInput {
        let body = try await request.body.collect(upTo: 1 << 20)
        do {
            return try JSONDecoder().decode(BookInput.self, from: Data(body.readableBytesView))
        } catch let error as DecodingError {
            throw HTTPError(.badRequest, message: "the body is not a book: \(JSON.describe(error))")
        }
    }

    func validPrice() throws -> Double {
        guard let price, price.isFinite, price >= 0 else { throw HTTPError(.badRequest, message: "price: a number from 0 up") }
        return price
    }
}
