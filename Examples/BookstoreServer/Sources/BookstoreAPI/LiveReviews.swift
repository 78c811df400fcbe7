import BookstoreModels
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import StructPostgres

/// A book's reviews as server-sent events: one `reviews` event with the current list, then one after every committed
/// change (`observe`, over the triggers of migrations 0003 and 0004). The stream ends when the client goes away, after
/// `events` events, or when the server shuts down (SIGINT, SIGTERM): the server then closes it at once rather than
/// waiting for the next change.
struct LiveReviews: Sendable {
    let service: PostgresService
    let book: UUID
    let events: Int

    func response(logger: Logger) -> Response {
        let (service, book, events) = (service, book, events)
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                var sent = 0
                let reviews = service.observe(
                    ReviewModel.self, where: .equal("bookID", book), sortedBy: [.descending("createdAt"), .ascending("uuid")],
                    loading: .none)
                for try await list in reviews.cancelOnGracefulShutdown() {
                    let data = String(decoding: try JSON.encode(list), as: UTF8.self)
                    try await writer.write(ByteBuffer(string: "event: reviews\ndata: \(data)\n\n"))
                    sent += 1
                    if sent >= events { break }
                }
                logger.debug("live reviews ended", metadata: ["events": "\(sent)"])
                try await writer.finish(nil)
            })
    }
}
