import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// Which server answered: a view that reports the serving backend's recovery state and port.
struct ServerRole: StoredModel {
    static let table = "server_role"
    var uuid: UUID
    var standby: Bool
    var port: Int32

    static let create = """
        CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL);
        CREATE VIEW server_role AS
            SELECT '00000000-0000-0000-0000-000000000001'::uuid AS uuid, pg_is_in_recovery() AS standby, inet_server_port() AS port
        """
}

/// Read replicas and failover against real servers: a throwaway primary and a streaming replica made from it with
/// `pg_basebackup -R`, each test its own pair (a test stops or promotes servers).
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "replicas are started next to the local cluster; DATABASE_URL is set"))
struct ReplicaTests {
    private func withPair(_ body: (LocalPostgresCluster, LocalPostgresCluster) async throws -> Void) async throws {
        let primary = try LocalPostgresCluster.start()
        defer { primary.stop() }
        var setup = PostgresService.Configuration(connection: primary.settings, pool: PoolOptions(maxConnections: 2))
        setup.preparesStatements = false
        try await PostgresService.withService(configuration: setup) { try await $0.execute(unsafeSQL: ServerRole.create) }
        let replica = try primary.startReplica()
        defer { replica.stop() }
        try await body(primary, replica)
    }

    /// Waits until the replica has replayed everything the primary has written so far.
    private func waitForReplay(_ primary: LocalPostgresCluster, _ replica: LocalPostgresCluster) async throws {
        let lsn = try await PostgresService.withService(configuration: .init(connection: primary.settings)) { service in
            try await service.query("SELECT pg_current_wal_insert_lsn()::text")[0].decode(String.self)
        }
        try await PostgresService.withService(configuration: .init(connection: replica.settings)) { service in
            for _ in 0..<500 {
                let caughtUp = try await service.query("SELECT pg_last_wal_replay_lsn() >= \(unescaped: "'\(lsn)'")::pg_lsn")[0].decode(
                    Bool.self)
                if caughtUp { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the replica did not replay \(lsn) within 10 s")
        }
    }

    private func role(_ access: some PostgresAccess) async throws -> ServerRole {
        try #require(try await access.fetch(ServerRole.self, loading: .none).first)
    }

    @Test func readsGoToTheReplicasAndWritesTransactionsAndPinnedReadsToThePrimary() async throws {
        try await withPair { primary, replica in
            var configuration = PostgresService.Configuration(connection: primary.settings)
            configuration.replicas = [replica.settings]
            try await PostgresService.withService(configuration: configuration) { service in
                for _ in 0..<5 {
                    let served = try await role(service)
                    #expect(served.standby && Int(served.port) == replica.settings.port)
                }
                #expect(try await service.count(ServerRole.self) == 1)
                let written = Tally(uuid: UUID(), count: 1)
                try await service.update(entities: [written])
                #expect(try await service.primary.fetch(Tally.self).map(\.uuid) == [written.uuid])
                #expect(try await role(service.primary).standby == false)
                let inTransaction = try await service.transaction { try await role($0) }
                #expect(inTransaction.standby == false)
                try await waitForReplay(primary, replica)
                #expect(try await service.fetch(Tally.self).map(\.uuid) == [written.uuid])
                var streamed = 0
                for try await _ in service.stream(Tally.self) { streamed += 1 }
                #expect(streamed == 1)
            }
        }
    }

    @Test func aStoppedReplicaIsSkippedWithoutAnErrorAndAReplicaTooFarBehindToo() async throws {
        try await withPair { primary, replica in
            var configuration = PostgresService.Configuration(connection: primary.settings)
            configuration.replicas = [replica.settings]
            configuration.maxReplicaLag = .milliseconds(300)
            configuration.replicaCheckInterval = .milliseconds(100)
            try await PostgresService.withService(configuration: configuration) { service in
                #expect(try await role(service).standby)
                // Replay paused while the primary writes: the replica falls behind and reads leave it.
                try await PostgresService.withService(configuration: .init(connection: replica.settings)) {
                    _ = try await $0.query("SELECT pg_wal_replay_pause()")
                }
                try await service.update(entities: [Tally(uuid: UUID(), count: 1)])
                try await Task.sleep(for: .seconds(1))
                try await service.update(entities: [Tally(uuid: UUID(), count: 2)])
                var left = false
                for _ in 0..<50 where !left {
                    left = try await role(service).standby == false
                    if !left { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(left, "reads left the lagging replica")
                #expect(try await service.count(Tally.self) == 2)
                try await PostgresService.withService(configuration: .init(connection: replica.settings)) {
                    _ = try await $0.query("SELECT pg_wal_replay_resume()")
                }
                var back = false
                for _ in 0..<50 where !back {
                    back = try await role(service).standby
                    if !back { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(back, "reads came back to the replica once it caught up")
                // Stopped: every read still answers, from the primary.
                replica.stop()
                for _ in 0..<20 {
                    #expect(try await role(service).standby == false)
                    #expect(try await service.count(Tally.self) == 2)
                }
            }
        }
    }

    @Test func aMultiHostURLFindsThePrimaryAndAfterFailoverWritesToThePromotedReplica() async throws {
        try await withPair { primary, replica in
            let (p, r) = (primary.settings, replica.settings)
            let url =
                "postgres://postgres:\(p.password ?? "")@127.0.0.1:\(r.port),127.0.0.1:\(p.port)/postgres?sslmode=disable&target_session_attrs=read-write"
            let settings = try ConnectionSettings(url: url)
            #expect(settings.endpoints.map(\.port) == [r.port, p.port])
            try await PostgresService.withService(configuration: .init(connection: settings)) { service in
                // The replica is listed first but refuses writes: the primary is found.
                try await service.update(entities: [Tally(uuid: UUID(), count: 1)])
                #expect(try await role(service).port == Int32(p.port))
                try await waitForReplay(primary, replica)
                primary.stop()
                try replica.promote()
                try await service.update(entities: [Tally(uuid: UUID(), count: 2)])
                let served = try await role(service)
                #expect(served.port == Int32(r.port) && !served.standby)
                #expect(try await service.count(Tally.self) == 2)
            }
        }
    }

    @Test func noListedHostFittingTheAttributesIsAnErrorNamingEachHost() async throws {
        try await withPair { primary, replica in
            var settings = replica.settings
            settings.targetSessionAttributes = .primary
            try await PostgresService.withService(configuration: .init(connection: settings)) { service in
                let error = await #expect(throws: StructPostgresError.self) { try await service.count(Tally.self) }
                #expect(error?.message.contains("target_session_attrs=primary") == true)
                #expect(error?.message.contains("127.0.0.1:\(replica.settings.port) is a standby") == true)
            }
        }
    }
}
