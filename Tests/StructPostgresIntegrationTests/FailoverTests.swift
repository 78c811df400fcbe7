import Foundation
import PostgresNIO
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Failover and switchover under a steady load of writes, against a real primary and a synchronous standby started
/// by the test: no write the service acknowledged is missing from the host that takes over, and writes refused by
/// a former primary during a switchover are sent again to the new one.
@Suite(
    .serialized, .tags(.timed),
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "the servers are started next to the local cluster; DATABASE_URL is set"))
struct FailoverTests {
    /// Runs of the failover (each a new pair of servers): `STRUCTPG_FAILOVER_RUNS`, 5 by default.
    static let runs = Int(ProcessInfo.processInfo.environment["STRUCTPG_FAILOVER_RUNS"] ?? "") ?? 5

    private static func admin(_ settings: ConnectionSettings, _ sql: String...) async throws {
        var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 1))
        configuration.preparesStatements = false
        try await PostgresService.withService(configuration: configuration) { service in
            for statement in sql { try await service.execute(unsafeSQL: statement) }
        }
    }

    private static func value<T: PostgresDecodable & Sendable>(_ settings: ConnectionSettings, _ sql: String, as type: T.Type) async throws
        -> T?
    {
        var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 1))
        configuration.preparesStatements = false
        return try await PostgresService.withService(configuration: configuration) { service in
            try await service.query(PostgresQuery(unsafeSQL: sql)).first?.decode(T.self)
        }
    }

    /// A primary whose commits wait for a synchronous standby, and that standby.
    private func withSynchronousPair(_ body: (LocalPostgresCluster, LocalPostgresCluster, String) async throws -> Void) async throws {
        let primary = try LocalPostgresCluster.start()
        defer { primary.stop() }
        try await Self.admin(primary.settings, "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
        let standby = try primary.startReplica()
        defer { standby.stop() }
        // The throwaway cluster runs with synchronous_commit off on its command line: a role's setting overrides it.
        try await Self.admin(
            primary.settings,
            "ALTER ROLE postgres SET synchronous_commit = on",
            "ALTER SYSTEM SET synchronous_standby_names = '*'",
            "SELECT pg_reload_conf()")
        var synchronous = false
        for _ in 0..<300 where !synchronous {
            synchronous =
                try await Self.value(primary.settings, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'", as: Int64.self)
                == 1
            if !synchronous { try await Task.sleep(for: .milliseconds(20)) }
        }
        try #require(synchronous, "the standby became synchronous")
        let (p, s) = (primary.settings, standby.settings)
        let url =
            "postgres://postgres:\(p.password ?? "")@127.0.0.1:\(p.port),127.0.0.1:\(s.port)/postgres?sslmode=disable&target_session_attrs=read-write"
        try await body(primary, standby, url)
    }

    /// Stops the primary's walsender (SIGSTOP): from now on no WAL reaches the standby, and every commit waits
    /// on the primary for the standby's confirmation.
    private func pauseReplication(from primary: LocalPostgresCluster) async throws -> Int32 {
        let pid = try #require(try await Self.value(primary.settings, "SELECT pid FROM pg_stat_replication", as: Int32.self))
        #expect(kill(pid, SIGSTOP) == 0)
        return pid
    }

    /// Crashes `primary` (`pg_ctl stop -m immediate`) while its walsender `sender` is stopped, killing the sender
    /// too, so that it sends nothing more.
    private func crash(_ primary: LocalPostgresCluster, sender: Int32) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                do { try primary.stopImmediately(); done.resume() } catch { done.resume(throwing: error) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { kill(sender, SIGKILL) }
        }
    }

    @Test func aCrashedPrimaryAndAPromotedSynchronousStandbyLoseNoAcknowledgedWrite() async throws {
        var report: [String] = []
        for run in 1...Self.runs {
            try await withSynchronousPair { primary, standby, url in
                var configuration = PostgresService.Configuration(
                    connection: try ConnectionSettings(url: url), pool: PoolOptions(maxConnections: 8))
                configuration.pool.acquireTimeout = .seconds(20)
                try await PostgresService.withService(configuration: configuration) { service in
                    let writers = AcknowledgedWriters { Tally(uuid: $0, count: 1) }
                    let load = Task { await writers.run(service, tasks: 8) }
                    try await Task.sleep(for: .milliseconds(800))
                    // Replication stops: commits wait on the primary for the standby, and the primary crashes.
                    let sender = try await pauseReplication(from: primary)
                    try await Task.sleep(for: .milliseconds(300))
                    let beforeCrash = writers.acknowledged.withLock { $0.count }
                    try await crash(primary, sender: sender)
                    try standby.promote()
                    try await Task.sleep(for: .milliseconds(1500))
                    writers.stopping.store(true, ordering: .relaxed)
                    await load.value
                    let acknowledged = writers.keys
                    let stored = try await service.query("SELECT uuid FROM tallies").map { try $0.decode(UUID.self) }
                    let lost = Set(acknowledged).subtracting(stored)
                    report.append(
                        "run \(run): \(acknowledged.count) acknowledged (\(beforeCrash) before the crash), \(lost.count) lost, \(writers.failures.withLock { $0.count }) failed calls"
                    )
                    #expect(
                        lost.isEmpty,
                        "run \(run): \(lost.count) of \(acknowledged.count) acknowledged writes are not on the promoted standby")
                    #expect(acknowledged.count > beforeCrash, "run \(run): writes went on against the promoted standby")
                }
            }
        }
        print("failover:", report.joined(separator: "; "))
    }

    @Test func writesRefusedByAFormerPrimaryDuringASwitchoverAreSentToTheNewOne() async throws {
        try await withSynchronousPair { primary, standby, url in
            var configuration = PostgresService.Configuration(
                connection: try ConnectionSettings(url: url), pool: PoolOptions(maxConnections: 8))
            configuration.pool.acquireTimeout = .seconds(20)
            try await PostgresService.withService(configuration: configuration) { service in
                let writers = AcknowledgedWriters { Tally(uuid: $0, count: 1) }
                let load = Task { await writers.run(service, tasks: 8) }
                try await Task.sleep(for: .milliseconds(500))
                // A planned switchover: the primary turns read-only (writes now fail with 25006), the standby
                // catches up and is promoted.
                try await Self.admin(
                    primary.settings,
                    "ALTER SYSTEM SET default_transaction_read_only = on", "ALTER SYSTEM SET synchronous_standby_names = ''",
                    "SELECT pg_reload_conf()")
                try await Task.sleep(for: .milliseconds(500))
                try standby.promote()
                try await Task.sleep(for: .milliseconds(1000))
                writers.stopping.store(true, ordering: .relaxed)
                await load.value
                let failures = writers.failures.withLock { $0 }
                #expect(failures.count == 0, "failed calls, the first: \(failures.first ?? "")")
                let acknowledged = writers.keys
                let onNew = try await Self.value(standby.settings, "SELECT count(*) FROM tallies", as: Int64.self)
                let onOld = try await Self.value(primary.settings, "SELECT count(*) FROM tallies", as: Int64.self)
                #expect(
                    Int(onNew ?? 0) >= acknowledged.count && (onNew ?? 0) > (onOld ?? 0),
                    "writes reached the promoted standby after the switchover")
                let stored = Set(try await service.query("SELECT uuid FROM tallies").map { try $0.decode(UUID.self) })
                #expect(Set(acknowledged).isSubset(of: stored))
            }
        }
    }

    /// A transaction that is read-only by its own choice is refused at once, not retried as a switchover.
    @Test func aReadOnlyTransactionOnAWritablePrimaryFailsAtOnce() async throws {
        try await withSynchronousPair { _, _, url in
            try await PostgresService.withService(configuration: .init(connection: try ConnectionSettings(url: url))) { service in
                let started = ContinuousClock.now
                let error = await #expect(throws: StructPostgresError.self) {
                    try await service.transaction(.init(readOnly: true)) { try await $0.update(entities: [Tally(uuid: UUID(), count: 1)]) }
                }
                #expect(error?.sqlState == "25006")
                #expect(ContinuousClock.now - started < .seconds(5))
            }
        }
    }
}
