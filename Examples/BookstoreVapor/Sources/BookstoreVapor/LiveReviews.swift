import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresVapor
import Vapor

/// A book's reviews as server-sent events: one `reviews` event with the current list, then one after every committed
/// change (`observe`, over the triggers of migrations 0003 and 0004). The stream ends when the client goes away, after
/// `events` events, or when the app shuts down (SIGINT, SIGTERM): it is closed at once rather than at the next change.
struct LiveReviews: Sendable {
    let book: UUID
    let events: Int

    func response(for req: Request) -> Response {
        let (store, support, logger, book, events) = (req.store, req.application.structPostgres, req.logger, book, events)
        let headers: HTTPHeaders = ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"]
        return Response(
            status: .ok, headers: headers,
            body: .init(managedAsyncStream: { writer in
                let sent = try await support.cancelWhenShuttingDown {
                    var sent = 0
                    let encoder = JSONEncoder()
                    encoder.dateEncodingStrategy = .iso8601
                    let reviews = store.observe(
                        ReviewModel.self, where: .equal("bookID", book), sortedBy: [.descending("createdAt"), .ascending("uuid")],
                        loading: .none)
                    for try await list in reviews {
                        let data = String(decoding: try encoder.encode(list), as: UTF8.self)
                        try await writer.writeBuffer(ByteBuffer(string: "event: reviews\ndata: \(data)\n\n"))
                        sent += 1
                        if sent >= events { break }
                    }
                    return sent
                }
                logger.debug("live reviews ended", metadata: ["events": "\(sent.map(String.init) ?? "until shutdown")"])
            }))
    }
}
