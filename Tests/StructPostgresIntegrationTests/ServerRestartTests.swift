import Foundation
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

/// Servers that go away while calls are under way: every call ends, with its result or an error, and none waits
/// for ever (a statement written to a connection just as it closes, a lease counting on a connection that has
/// just closed). A server of its own, restarted or stopped with `pg_ctl`.
@Suite(
    .serialized, .tags(.timed), .timeLimit(.minutes(3)),
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "the server to restart is started next to the local cluster; DATABASE_URL is set"))
struct ServerRestartTests {
    private final class Load: Sendable {
        let stopping = Atomic(false)
        let running = Atomic(0)
        let succeeded = Atomic(0)
        let failed = Mutex<Set<StructPostgresError.Code>>([])
    }

    /// Starts `tasks` unstructured tasks that write and read single rows until stopped: unstructured, so that a
    /// call that never ends fails the test (see ``waitForEnd(_:within:)``) instead of hanging it.
    private func startLoad(_ service: PostgresService, tasks: Int) -> Load {
        let load = Load()
        for task in 0..<tasks {
            load.running.add(1, ordering: .relaxed)
            Task {
                defer { load.running.subtract(1, ordering: .relaxed) }
                var round: Int32 = 0
                while !load.stopping.load(ordering: .relaxed) {
                    round += 1
                    do {
                        if task.isMultiple(of: 2) {
                            try await service.update(entities: [Tally(uuid: UUID(), count: round)])
                        } else {
                            _ = try await service.fetch(Tally.self, limit: 1)
                        }
                        load.succeeded.add(1, ordering: .relaxed)
                    } catch {
                        load.failed.withLock { _ = $0.insert((error as? StructPostgresError)?.code ?? .client) }
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                }
            }
        }
        return load
    }

    /// Stops the load and waits for its tasks to end; records an issue naming how many did not.
    private func waitForEnd(_ load: Load, within limit: Duration) async throws {
        load.stopping.store(true, ordering: .relaxed)
        let deadline = ContinuousClock.now + limit
        while load.running.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let stuck = load.running.load(ordering: .relaxed)
        #expect(stuck == 0, "\(stuck) calls still waiting \(limit) after the load was stopped")
    }

    @Test func everyCallEndsWhenTheServerRestartsUnderLoad() async throws {
        let cluster = try LocalPostgresCluster.start()
        defer { cluster.stop() }
        let configuration = PostgresService.Configuration(
            connection: cluster.settings, pool: PoolOptions(maxConnections: 6, acquireTimeout: .seconds(10)))
        try await PostgresService.withService(configuration: configuration) { service in
            try await service.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
            for _ in 0..<4 {
                let load = startLoad(service, tasks: 16)
                try await Task.sleep(for: .milliseconds(300))
                let before = load.succeeded.load(ordering: .relaxed)
                try await onThread { try cluster.restart() }
                var recovered = false
                for _ in 0..<250 where !recovered {
                    try await Task.sleep(for: .milliseconds(20))
                    recovered = load.succeeded.load(ordering: .relaxed) > before + 50
                }
                try await waitForEnd(load, within: .seconds(20))
                #expect(recovered, "calls succeed again after the restart")
                let codes = load.failed.withLock { $0 }
                #expect(codes.isSubset(of: [.connectionLost, .server, .poolTimeout]), "failures say the connection was lost: \(codes)")
            }
        }
    }

    @Test func everyCallEndsWhenTheServerStopsUnderLoad() async throws {
        let cluster = try LocalPostgresCluster.start()
        var stopped = false
        defer { if !stopped { cluster.stop() } }
        let configuration = PostgresService.Configuration(
            connection: cluster.settings, pool: PoolOptions(maxConnections: 6, acquireTimeout: .seconds(5)))
        try await PostgresService.withService(configuration: configuration) { service in
            try await service.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
            let load = startLoad(service, tasks: 16)
            try await Task.sleep(for: .milliseconds(300))
            try await onThread { cluster.stop() }
            stopped = true
            try await Task.sleep(for: .milliseconds(300))
            // Each call ends within the acquire timeout and the connect timeout, however it met the stop.
            try await waitForEnd(load, within: .seconds(30))
        }
    }
}
