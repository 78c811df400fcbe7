import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// Figures and pages are reads: outside a transaction they go to a replica, inside one and through `primary` to the
/// primary. Which server answered is the port `server_role` reports.
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "replicas are started next to the local cluster; DATABASE_URL is set"))
struct AggregateReplicaTests {
    @Test func figuresAndPagesGoToAReplicaUnlessPinnedOrInATransaction() async throws {
        let primary = try LocalPostgresCluster.start()
        defer { primary.stop() }
        var setup = PostgresService.Configuration(connection: primary.settings, pool: PoolOptions(maxConnections: 2))
        setup.preparesStatements = false
        try await PostgresService.withService(configuration: setup) { try await $0.execute(unsafeSQL: ServerRole.create) }
        let replica = try primary.startReplica()
        defer { replica.stop() }
        var configuration = PostgresService.Configuration(connection: primary.settings)
        configuration.replicas = [replica.settings]
        try await PostgresService.withService(configuration: configuration) { service in
            let replicaPort = Int32(replica.settings.port)
            let primaryPort = Int32(primary.settings.port)
            #expect(try await service.max(\ServerRole.port, of: ServerRole.self) == replicaPort)
            let (count, port) = try await service.aggregate(of: ServerRole.self, .count, .min(\.port))
            #expect(count == 1 && port == replicaPort)
            #expect(try await service.groups(of: ServerRole.self, by: \.standby, .max(\.port)).map { $0.key } == [true])
            #expect(try await service.fetch(ServerRole.self, pageSize: 5).items.map(\.port) == [replicaPort])
            #expect(try await service.primary.max(\ServerRole.port, of: ServerRole.self) == primaryPort)
            #expect(try await service.transaction { try await $0.max(\ServerRole.port, of: ServerRole.self) } == primaryPort)
            #expect(try await service.transaction { try await $0.fetch(ServerRole.self, pageSize: 5).items.map(\.port) } == [primaryPort])
        }
    }
}
