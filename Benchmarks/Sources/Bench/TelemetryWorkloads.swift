import CoreMetrics
import Foundation
import StructPostgres
import Tracing

/// W9: what instrumentation costs when nothing records: W2's point queries and W3's single upserts through a
/// service given a no-op tracer and metrics factory, against the service with nothing bootstrapped, interleaved
/// call by call (targets: >= 0.97).
extension Bench {
    func telemetryCost(_ settings: ConnectionSettings) async throws {
        let (books, reviews) = (options.books, options.reviews)
        try await seed(books: books, reviews: reviews)
        var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 8))
        configuration.logger = service.configuration.logger
        configuration.tracer = NoOpTracer()
        configuration.metricsFactory = NOOPMetricsHandler.instance
        try await PostgresService.withService(configuration: configuration) { instrumented in
            var queries: [Bool: [Double]] = [:]
            var upserts: [Bool: [Double]] = [:]
            for call in -50..<options.singles {
                let book = BenchData.uuid(2, (max(call, 0) * 7_919) % books)
                for noOps in call.isMultiple(of: 2) ? [true, false] : [false, true] {
                    let target = noOps ? instrumented : service
                    let query = try await Report.seconds {
                        _ = try await target.fetch(BenchReview.self, where: .equal("bookID", book), sortedBy: [.ascending("createdAt")])
                    }
                    let written = BenchData.book(max(call, 0) % books, authors: options.authors, version: call & 1 + 7)
                    let upsert = try await Report.seconds { try await target.update(entities: [written]) }
                    if call >= 0 {
                        queries[noOps, default: []].append(query)
                        upserts[noOps, default: []].append(upsert)
                    }
                }
            }
            let query = Report.median(queries[false]!) / Report.median(queries[true]!)
            let upsert = Report.median(upserts[false]!) / Report.median(upserts[true]!)
            say(
                "W9 no-op tracer and metrics given against nothing bootstrapped: point queries at \(format(query)), single upserts at \(format(upsert)) of the speed (targets >= 0.97: \(query >= 0.97 ? "met" : "missed"), \(upsert >= 0.97 ? "met" : "missed"))"
            )
        }
    }
}
