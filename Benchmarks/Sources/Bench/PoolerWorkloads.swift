import Foundation
import StructPostgres
import StructPostgresTesting

/// PGB: W2's point queries (the reviews of a book) through a local PgBouncer in transaction mode with
/// `pool_mode=transaction`, against the same queries sent to the server directly, interleaved call by call. No
/// target: the figure is what a pooler costs (one more hop, and statements parsed each time), for the docs.
extension Bench {
    func throughPooler(_ cluster: LocalPostgresCluster?) async throws {
        guard let cluster else {
            say("PGB skipped: it starts a PgBouncer in front of the benchmark's own server (DATABASE_URL is set)")
            return
        }
        guard LocalPgBouncer.program != nil else {
            say("PGB skipped: pgbouncer is not installed (scripts/ensure-postgres.sh --pgbouncer installs it)")
            return
        }
        let bouncer = try LocalPgBouncer.start(in: cluster, poolSize: 8)
        defer { bouncer.stop() }
        let books = options.books
        try await seed(books: books, reviews: options.reviews)
        var configuration = PostgresService.Configuration(connection: bouncer.settings, pool: PoolOptions(maxConnections: 8))
        configuration.logger = service.configuration.logger
        try await PostgresService.withService(configuration: configuration) { pooled in
            var latencies: [Bool: [Double]] = [:]
            for call in -50..<options.singles {
                let book = BenchData.uuid(2, (max(call, 0) * 7_919) % books)
                for throughPooler in call.isMultiple(of: 2) ? [true, false] : [false, true] {
                    let target = throughPooler ? pooled : service
                    let seconds = try await Report.seconds {
                        _ = try await target.fetch(BenchReview.self, where: .equal("bookID", book), sortedBy: [.ascending("createdAt")])
                    }
                    if call >= 0 { latencies[throughPooler, default: []].append(seconds) }
                }
            }
            let (direct, pooledP50) = (Report.median(latencies[false]!), Report.median(latencies[true]!))
            say(
                "PGB reviews of a book p50 through PgBouncer 1.18 (pool_mode=transaction): \(Int(pooledP50 * 1e6)) µs, direct \(Int(direct * 1e6)) µs: \(format(pooledP50 / direct))x the latency"
            )
        }
    }
}
