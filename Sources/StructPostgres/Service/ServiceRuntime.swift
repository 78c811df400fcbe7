import Logging
import PostgresNIO
import Synchronization

/// What a service and its transactions share: configuration, the catalog cache, prepared statement
/// names and pool accounting.
final class ServiceRuntime: Sendable {
    let configuration: PostgresService.Configuration
    let client: PostgresClient
    let preparedStatements = PreparedStatementRegistry()
    private let schemas = Mutex<[String: TableSchema]>([:])
    private let descriptions = Mutex<[ObjectIdentifier: EntityDescription]>([:])
    private let upsertTexts = Mutex<[UpsertShape: String]>([:])
    private let singleRowPlans = Mutex<[SingleRowUpsertPlan.Key: SingleRowUpsertPlan]>([:])
    let leases = Mutex(LeaseBook())
    let keeper: ConnectionKeeper
    let canceller: StatementCanceller

    init(configuration: PostgresService.Configuration, client: PostgresClient) {
        self.configuration = configuration
        self.client = client
        self.keeper = ConnectionKeeper(idleLimit: configuration.pool.keepIdleConnectionsFor)
        self.canceller = StatementCanceller(
            settings: configuration.connection,
            connectTimeout: configuration.connection.connectTimeout ?? configuration.pool.connectTimeout,
            logger: configuration.logger)
    }

    var logger: Logger { configuration.logger }

    /// Counts ``forgetSchemas()`` calls. What was derived from the catalog before the latest one is not cached:
    /// the stores below check it under their lock, after which the next forget clears them.
    private let generation = Atomic(0)
    var schemaGeneration: Int { generation.load(ordering: .acquiring) }
    private func isCurrent(_ schema: TableSchema) -> Bool { schema.generation == schemaGeneration }

    func cachedSchema(_ table: String) -> TableSchema? { schemas.withLock { $0[table] } }
    func store(_ schema: TableSchema) { schemas.withLock { if isCurrent(schema) { $0[schema.table] = schema } } }
    func cachedDescription(_ entity: ObjectIdentifier) -> EntityDescription? { descriptions.withLock { $0[entity] } }
    func store(_ description: EntityDescription, for entity: ObjectIdentifier) {
        descriptions.withLock { if isCurrent(description.schema) { $0[entity] = description } }
    }

    /// Forgets table layouts and prepared statements: both may no longer match a changed schema.
    func forgetSchemas() {
        generation.add(1, ordering: .sequentiallyConsistent)
        schemas.withLock { $0.removeAll() }
        descriptions.withLock { $0.removeAll() }
        upsertTexts.withLock { $0.removeAll() }
        singleRowPlans.withLock { $0.removeAll() }
        preparedStatements.forgetAll()
    }

    /// The SQL text of an upsert of this shape, built once (quoting and joining names is not free).
    func upsertText(_ shape: UpsertShape, build: () throws -> String) rethrows -> String {
        if let known = upsertTexts.withLock({ $0[shape] }) { return known }
        let text = try build()
        upsertTexts.withLock { texts in
            if texts.count >= PreparedStatementRegistry.capacity { texts.removeAll() }
            texts[shape] = text
        }
        return text
    }

    func singleRowPlan(_ key: SingleRowUpsertPlan.Key) -> SingleRowUpsertPlan? { singleRowPlans.withLock { $0[key] } }
    func store(_ plan: SingleRowUpsertPlan, for key: SingleRowUpsertPlan.Key) {
        singleRowPlans.withLock { plans in
            guard isCurrent(plan.description.schema) else { return }
            if plans.count >= PreparedStatementRegistry.capacity, plans[key] == nil { plans.removeAll() }
            plans[key] = plan
        }
    }

    var connectionsInUse: Int { leases.withLock { $0.inUse } }
}

/// Which pooled connections are known to be open, how many are in use or being waited for, and which are
/// kept idle for the next call (see ``ConnectionKeeper``).
struct LeaseBook {
    var open: Set<PostgresConnection.ID> = []
    var inUse = 0
    var waiting = 0
    /// Kept connections no call is using, the most recently used last.
    var kept: [IdleConnection] = []

    /// Whether a connection known to be open is idle in the pool and not promised to a waiting lease.
    var hasIdleConnection: Bool { open.count > inUse + waiting + kept.count }
}

/// What an upsert's SQL text depends on: the entity, its encoded columns with their wire types, the conflict rule.
struct UpsertShape: Hashable, Sendable {
    struct Column: Hashable, Sendable {
        let name: String
        let wire: WireType
        let needsCast: Bool
    }

    let entity: ObjectIdentifier
    let columns: [Column]
    let conflict: UpsertOptions.Conflict
    let singleRow: Bool
}
