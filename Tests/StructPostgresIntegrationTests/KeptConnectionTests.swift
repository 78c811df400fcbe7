import Foundation
import Synchronization
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import StructPostgresTesting
import Testing

/// Connections kept leased between calls (``LeaseStateMachine``): reused, handed to callers waiting for one,
/// dropped when closed, returned to PostgresNIO's pool when idle and when the service stops.
@Suite struct KeptConnectionTests {
    /// Long enough that the idle sweep never runs during a test on a loaded machine.
    private static let keepLong = PoolOptions(maxConnections: 4, keepIdleConnectionsFor: .seconds(60))

    private func keptCount(_ service: PostgresService) -> Int { service.runtime.router.hosts[0].idleKeptCount }

    /// Runs `body` on a service of its own as the cluster's superuser.
    private func asAdmin<T>(_ body: (PostgresService) async throws -> T) async throws -> T {
        let admin = PostgresService.Configuration(connection: try await TestPostgres.adminSettings(), pool: PoolOptions(maxConnections: 1))
        return try await PostgresService.withService(configuration: admin, body)
    }

    /// Waits (at most 10 s) until every idle kept connection of `service` has seen its backend end and was dropped.
    private func waitUntilKeptConnectionsClosed(_ service: PostgresService) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, keptCount(service) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func backendPID(_ service: PostgresService) async throws -> Int32 {
        try await service.query("SELECT pg_backend_pid()")[0].decode(Int32.self)
    }

    @Test func callsReuseTheConnectionTheLastCallGaveBack() async throws {
        try await withTables(pool: Self.keepLong) { service, _ in
            // The first call opens a connection; the second keeps it.
            _ = try await backendPID(service)
            let kept = try await backendPID(service)
            #expect(keptCount(service) == 1)
            for _ in 0..<5 {
                #expect(try await backendPID(service) == kept)
                #expect(keptCount(service) == 1)
                #expect(service.connectionsInUse == 0)
            }
            try await service.withConnection { _ in
                #expect(keptCount(service) == 0)
                #expect(service.connectionsInUse == 1)
            }
        }
    }

    @Test func aKeptConnectionIdleLongerThanItsLimitGoesBackToThePool() async throws {
        try await withTables(pool: PoolOptions(maxConnections: 4, keepIdleConnectionsFor: .milliseconds(500))) { service, _ in
            _ = try await backendPID(service)
            let kept = try await backendPID(service)
            #expect(keptCount(service) == 1)
            let deadline = ContinuousClock.now + .seconds(10)
            while keptCount(service) > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(keptCount(service) == 0)
            #expect(service.connectionsInUse == 0)
            // Back in the pool, not lost: the pool's only connection serves the next call.
            #expect(try await backendPID(service) == kept)
        }
    }

    @Test func aZeroLimitKeepsNoConnection() async throws {
        try await withTables(pool: PoolOptions(maxConnections: 4, keepIdleConnectionsFor: .zero)) { service, _ in
            for _ in 0..<3 { _ = try await backendPID(service) }
            #expect(keptCount(service) == 0)
            #expect(service.connectionsInUse == 0)
        }
    }

    @Test func aCallerWaitingInThePoolGetsTheKeptConnectionWhenItIsGivenBack() async throws {
        try await withTables(pool: PoolOptions(maxConnections: 1, acquireTimeout: .seconds(20), keepIdleConnectionsFor: .seconds(60))) {
            service, _ in
            _ = try await backendPID(service)
            _ = try await backendPID(service)
            #expect(keptCount(service) == 1)
            async let holderEnded: ContinuousClock.Instant = service.withConnection { _ in
                try await Task.sleep(for: .milliseconds(500))
                return ContinuousClock.now
            }
            while service.connectionsInUse == 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(keptCount(service) == 0)
            _ = try await backendPID(service)  // waits in the pool: the only connection is in use
            let waiterEnded = ContinuousClock.now
            // Given straight back to the pool: kept, it would stay idle for a minute and the waiter would time out.
            #expect(waiterEnded - (try await holderEnded) < .seconds(5))
            #expect(service.connectionsInUse == 0)
        }
    }

    @Test func aKeptConnectionTheServerClosedIsDroppedAndTheCallTakesAnother() async throws {
        try await withTables(pool: Self.keepLong) { service, _ in
            _ = try await backendPID(service)
            let doomed = try await backendPID(service)
            // Another client ends the idle kept connection's backend and waits until it has exited.
            try await asAdmin { _ = try await $0.query("SELECT pg_terminate_backend(\(doomed), 5000)") }
            try await waitUntilKeptConnectionsClosed(service)
            #expect(keptCount(service) == 0, "the closed connection was dropped")
            let pid = try await backendPID(service)
            #expect(pid != doomed)
            #expect(keptCount(service) == 1)
        }
    }

    @Test func keptConnectionsTheServerClosedAllAtOnceAreDroppedWithoutUsingUpTheRetries() async throws {
        // More kept connections than PostgresNIO's pool opens at once (20), all ended by the server.
        let width = 22
        let database = try await TestDatabase.create()
        let configuration = PostgresService.Configuration(
            connection: database.settings, pool: PoolOptions(maxConnections: width, keepIdleConnectionsFor: .seconds(60)))
        try await PostgresService.withService(configuration: configuration) { service in
            // Waves of calls that each wait for all to hold a connection: the first opens them, the next keep them.
            // (PostgresNIO's pool opens at most 20 at once: a wave may wait for the last ones a few times.)
            for _ in 0..<6 where keptCount(service) < width {
                let holding = Counter()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<width {
                        group.addTask {
                            try await service.withConnection { _ in
                                holding.value.add(1, ordering: .relaxed)
                                let deadline = ContinuousClock.now + .seconds(2)
                                while holding.value.load(ordering: .relaxed) < width, ContinuousClock.now < deadline {
                                    try await Task.sleep(for: .milliseconds(10))
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let kept = keptCount(service)
            #expect(kept == width)
            try await asAdmin { admin in
                _ = try await admin.query(
                    "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = \(database.settings.database)")
            }
            try await waitUntilKeptConnectionsClosed(service)
            #expect(keptCount(service) == 0, "every closed connection was dropped")
            let rows = try await service.query("SELECT 1")
            #expect(rows.count == 1)
            #expect(keptCount(service) == 1)
        }
        try await database.drop()
    }

    @Test(.timeLimit(.minutes(1))) func runReturnsWhenStoppedWhileACallStillUsesAKeptConnection() async throws {
        let database = try await TestDatabase.create()
        let service = try PostgresService(configuration: .init(connection: database.settings, pool: Self.keepLong))
        let running = Task { try await service.run() }
        await service.runtime.router.hosts[0].started.wait()
        _ = try await backendPID(service)
        _ = try await backendPID(service)
        #expect(keptCount(service) == 1)
        let gate = ReleaseSignal()
        let call = Task { try await service.withConnection { _ in await gate.wait() } }
        while service.connectionsInUse == 0 { try await Task.sleep(for: .milliseconds(5)) }
        running.cancel()
        let stopped = Mutex(false)
        let watcher = Task {
            _ = await running.result
            stopped.withLock { $0 = true }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !stopped.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // Stopping does not wait for a call that is not using the database: its connection is closed anyway.
        #expect(stopped.withLock { $0 })
        gate.signal()
        _ = await call.result
        await watcher.value
        #expect(service.connectionsInUse == 0)
        try await database.drop()
    }

    @Test func aCallMadeWhileTheServiceIsNotRunningTimesOutSayingSo() async throws {
        let database = try await TestDatabase.create()
        let service = try PostgresService(
            configuration: .init(
                connection: database.settings, pool: PoolOptions(maxConnections: 2, acquireTimeout: .seconds(1))))
        let error = await #expect(throws: StructPostgresError.self) { _ = try await service.query("SELECT 1") }
        #expect(error?.code == .poolTimeout)
        #expect(error?.message.contains("PostgresService.run() has not been started") == true, "\(error?.message ?? "no error")")
        try await database.drop()
    }

    @Test(.timeLimit(.minutes(1))) func aStoppedServiceClosesItsKeptConnections() async throws {
        let database = try await TestDatabase.create()
        let configuration = PostgresService.Configuration(connection: database.settings, pool: Self.keepLong)
        let (kept, bodyEnded) = try await PostgresService.withService(configuration: configuration) { service in
            for _ in 0..<3 { _ = try await backendPID(service) }
            return (keptCount(service), ContinuousClock.now)
        }
        #expect(kept == 1)
        #expect(ContinuousClock.now - bodyEnded < .seconds(5))
        let sessions = try await asAdmin { service in
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                let rows = try await service.query("SELECT count(*) FROM pg_stat_activity WHERE datname = \(database.settings.database)")
                let count = try rows[0].decode(Int64.self)
                if count == 0 || ContinuousClock.now > deadline { return count }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        #expect(sessions == 0)
        try await database.drop()
    }
}

private final class Counter: Sendable {
    let value = Atomic(0)
}
