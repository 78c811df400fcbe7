import Foundation
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

/// An observer across a silent cut (issue 51): its listening connection finds the link dead within the same bound
/// as every connection (keepalive and TCP_USER_TIMEOUT, shortened here to about 4 s), connects again once the link
/// is back, and fetches again, so that a change committed during the cut is not missed.
@Suite(
    .serialized, .tags(.timed), .timeLimit(.minutes(2)),
    .enabled(if: NetCut.unavailable == nil, "needs root and iproute2: SilentlyCuttableCluster.unavailableReason says why"))
struct NetCutObservationTests {
    /// The backends listening for this database's observers.
    private func listeners(_ service: PostgresService) async throws -> Set<Int32> {
        Set(
            try await service.query(
                """
                SELECT pid FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'
                """
            ).map { try $0.decode(Int32.self) })
    }

    private final class Observed: Sendable {
        let results = Mutex<[[CutTally]]>([])
        let failure = Mutex<String?>(nil)
    }

    @Test func anObserverAcrossACutReconnectsAfterTheHealAndMissesNothing() async throws {
        let server = try SilentlyCuttableCluster.start()
        defer { server.stop() }
        // The server's Unix-domain socket, which the cut does not touch: a change is committed during the cut through it.
        var local = server.settings
        local.host = server.cluster.socketDirectory
        try await NetCut.withService(server, pool: NetCutTests.pool) { service in
            try await service.installChangeNotifications(on: [CutTally.table])
            try await PostgresService.withService(configuration: .init(connection: local, pool: PoolOptions(maxConnections: 2))) { beside in
                let (results, failure) = (Observed(), Observed())
                let observer = Task {
                    do {
                        for try await result in service.observe(CutTally.self, loading: .none) {
                            results.results.withLock { $0.append(result) }
                        }
                    } catch {
                        failure.failure.withLock { $0 = "\(error)" }
                    }
                }
                defer { observer.cancel() }
                func seen(within limit: Duration, _ condition: ([CutTally]) -> Bool) async throws -> Duration? {
                    let start = ContinuousClock.now
                    while ContinuousClock.now - start < limit {
                        if results.results.withLock({ $0.contains(where: condition) }) { return ContinuousClock.now - start }
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    return nil
                }
                #expect(try await seen(within: .seconds(20)) { $0.isEmpty } != nil)
                let before = try await listeners(beside)
                #expect(before.count == 1)

                try server.cut()
                try await Task.sleep(for: .seconds(1))
                let during = CutTally(uuid: UUID(), count: 1)
                try await beside.update(entities: [during])
                try await Task.sleep(for: .seconds(9))
                #expect(
                    failure.failure.withLock { $0 } == nil,
                    "the observation goes on through the cut: \(failure.failure.withLock { $0 } ?? "")")
                try server.heal()
                let resynced = try await seen(within: .seconds(10)) { $0 == [during] }
                print(
                    "an observer across a 10 s cut: the change committed during the cut seen \(resynced.map { "\($0)" } ?? "never") after the heal"
                )
                #expect(resynced != nil && resynced! < .seconds(3), "\(String(describing: resynced))")

                let after = CutTally(uuid: UUID(), count: 2)
                try await beside.update(entities: [after])
                #expect(try await seen(within: .seconds(5)) { $0.count == 2 } != nil, "listening again after the heal")
                let now = try await listeners(beside)
                #expect(
                    !now.subtracting(before).isEmpty, "a new listening connection: the dead one was given up (before \(before), now \(now))"
                )
                #expect(failure.failure.withLock { $0 } == nil, "\(failure.failure.withLock { $0 } ?? "")")
            }
        }
    }
}
