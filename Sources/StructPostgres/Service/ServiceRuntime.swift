import Logging
import PostgresNIO
import Synchronization

/// What a service and its transactions share: configuration, the catalog cache and pool accounting.
final class ServiceRuntime: Sendable {
    let configuration: PostgresService.Configuration
    let client: PostgresClient
    private let schemas = Mutex<[String: TableSchema]>([:])
    private let inUse = Mutex<Int>(0)

    init(configuration: PostgresService.Configuration, client: PostgresClient) {
        self.configuration = configuration
        self.client = client
    }

    var logger: Logger { configuration.logger }

    func cachedSchema(_ table: String) -> TableSchema? { schemas.withLock { $0[table] } }
    func store(_ schema: TableSchema) { schemas.withLock { $0[schema.table] = schema } }
    func forgetSchemas() { schemas.withLock { $0.removeAll() } }

    var connectionsInUse: Int { inUse.withLock { $0 } }
    func leaseStarted() { inUse.withLock { $0 += 1 } }
    func leaseEnded() { inUse.withLock { $0 -= 1 } }
}
