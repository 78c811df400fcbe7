import Logging
import Synchronization
import StructPostgresCore

/// What every session of one service shares: logging, the statement observer, prepared statement names,
/// instrumentation, and what the layers above derive from the schema.
package final class SessionContext: Sendable {
    package let logger: Logger
    /// Log bound values and keep the server's `DETAIL` in errors.
    let logBoundValues: Bool
    let queryObserver: (@Sendable (QueryEvent) -> Void)?
    /// Whether statements are prepared: configured, and no transaction pooler seen.
    var preparesStatements: Bool { prepares.load(ordering: .relaxed) }
    private let prepares: Atomic<Bool>
    let preparedStatements = PreparedStatementRegistry()
    /// The table layouts, entity descriptions and statement texts of the layers above (the service's
    /// `SchemaMemory`), forgotten with the prepared statements.
    package let schemaCaches: any SchemaDerivedCaches
    let telemetry: Telemetry

    package init(configuration: PostgresConfiguration, telemetry: Telemetry, schemaCaches: any SchemaDerivedCaches) {
        self.telemetry = telemetry
        self.schemaCaches = schemaCaches
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
    package func forgetSchemas() {
        schemaCaches.forgetAll()
        preparedStatements.forgetAll()
    }
}

/// What the layers above the session derive from the schema and keep for a service: forgotten, with the prepared
/// statements, when the schema may have changed.
package protocol SchemaDerivedCaches: AnyObject, Sendable {
    func forgetAll()
}
