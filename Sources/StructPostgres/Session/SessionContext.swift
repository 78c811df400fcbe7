import Logging
import Synchronization

/// What every session of one service shares: logging, the statement observer, prepared statement names, the
/// tables read from the catalog, instrumentation.
final class SessionContext: Sendable {
    let logger: Logger
    /// Log bound values and keep the server's `DETAIL` in errors.
    let logBoundValues: Bool
    let queryObserver: (@Sendable (QueryEvent) -> Void)?
    /// Whether statements are prepared: configured, and no transaction pooler seen.
    var preparesStatements: Bool { prepares.load(ordering: .relaxed) }
    private let prepares: Atomic<Bool>
    let preparedStatements = PreparedStatementRegistry()
    let catalog = CatalogCache()
    let selects: SelectTemplates
    let telemetry: Telemetry

    init(configuration: PostgresConfiguration, telemetry: Telemetry) {
        self.telemetry = telemetry
        selects = SelectTemplates(catalog: catalog)
        logger = configuration.logger
        logBoundValues = configuration.logBoundValues
        queryObserver = configuration.queryObserver
        prepares = Atomic(configuration.preparesStatements && configuration.connection.poolMode == .session)
    }

    /// Stops preparing statements after a pooler refused one; true for the call that stopped it.
    func stopPreparing() -> Bool {
        prepares.exchange(false, ordering: .relaxed)
    }

    /// Forgets table layouts and prepared statements: both may no longer match a changed schema.
    func forgetSchemas() {
        catalog.forget()
        preparedStatements.forgetAll()
        selects.forgetAll()
    }
}

/// The table layouts and entity descriptions read from the catalog, kept until ``forget()``.
final class CatalogCache: Sendable {
    private let schemas = Guarded<[String: TableSchema]>([:])
    private let descriptions = Guarded<[ObjectIdentifier: EntityDescription]>([:])
    /// Counts ``forget()`` calls. What was derived from the catalog before the latest one is not cached: the
    /// stores check it under their lock, after which the next forget clears them.
    private let generationCounter = Atomic(0)

    var generation: Int { generationCounter.load(ordering: .acquiring) }
    /// Whether `schema` was read after the latest ``forget()``.
    func isCurrent(_ schema: TableSchema) -> Bool { schema.generation == generation }

    func schema(_ table: String) -> TableSchema? { schemas.withLock { $0[table] } }
    func store(_ schema: TableSchema) { schemas.withLock { if isCurrent(schema) { $0[schema.table] = schema } } }
    func description(_ entity: ObjectIdentifier) -> EntityDescription? { descriptions.withLock { $0[entity] } }
    func store(_ description: EntityDescription, for entity: ObjectIdentifier) {
        descriptions.withLock { if isCurrent(description.schema) { $0[entity] = description } }
    }

    func forget() {
        generationCounter.add(1, ordering: .sequentiallyConsistent)
        schemas.withLock { $0.removeAll() }
        descriptions.withLock { $0.removeAll() }
    }
}
