import Foundation
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

private struct Ledger: StoredModel {
    static let table = "ledger"
    let uuid: UUID
    var amount: Int32
}

/// Failover through a real HA engine: a pg_auto_failover formation (monitor, primary, synchronous secondary), the
/// service on the URI `pg_autoctl show uri` prints, writers running while `pg_autoctl perform failover` promotes the
/// secondary. No acknowledged write is lost, and writes resume on the new primary; the outage is printed.
@Suite(
    .serialized, .tags(.timed),
    .enabled(
        if: LocalAutoFailover.program != nil,
        "pg_auto_failover is not installed (apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli)"),
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "the formation is started next to the local cluster; DATABASE_URL is set"))
struct AutoFailoverTests {
    @Test func fourWritersThroughAFailoverLoseNoAcknowledgedWrite() async throws {
        let formation = try await Task.detached { try LocalAutoFailover.start() }.value
        defer { formation.stop() }
        var configuration = PostgresService.Configuration(
            connection: try ConnectionSettings(url: formation.uri), pool: PoolOptions(maxConnections: 4))
        configuration.pool.acquireTimeout = .seconds(60)
        try await PostgresService.withService(configuration: configuration) { service in
            try await service.execute(unsafeSQL: "CREATE TABLE ledger (uuid uuid PRIMARY KEY, amount integer NOT NULL)")
            let writers = AcknowledgedWriters { Ledger(uuid: $0, amount: 1) }
            let load = Task { await writers.run(service, tasks: 4) }
            try await Task.sleep(for: .seconds(1))
            let beforeFailover = writers.acknowledged.withLock { $0.count }
            let failoverStarted = ContinuousClock.now
            try await Task.detached { try formation.performFailover() }.value
            let failoverEnded = ContinuousClock.now
            // Writes go on against the new primary for a while.
            let deadline = ContinuousClock.now + .seconds(30)
            while writers.acknowledged.withLock({ $0.last?.1 ?? failoverStarted }) < failoverEnded && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .seconds(1))
            writers.stopping.store(true, ordering: .relaxed)
            await load.value

            let acknowledged = writers.acknowledged.withLock { $0 }
            let stored = Set(try await service.query("SELECT uuid FROM ledger").map { try $0.decode(UUID.self) })
            let lost = acknowledged.filter { !stored.contains($0.0) }
            // The outage: the longest gap between acknowledged writes from the failover's start on.
            let times = [failoverStarted] + acknowledged.map(\.1).filter { $0 > failoverStarted }.sorted()
            let outage = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .zero
            print(
                """
                pg_auto_failover: \(acknowledged.count) writes acknowledged (\(beforeFailover) before the failover), \(lost.count) lost, \
                \(writers.failures.withLock { $0.count }) failed calls; perform failover took \(failoverEnded - failoverStarted); \
                writes resumed after an outage of \(outage)
                """)
            #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged writes are not on the new primary")
            #expect(acknowledged.contains { $0.1 > failoverEnded }, "writes went on against the new primary")
        }
    }
}
