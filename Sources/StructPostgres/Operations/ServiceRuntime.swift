import Logging
import PostgresNIO

/// One service's engine, below its front door: the connections, what its sessions share, and the write
/// layer's caches. Every operation of the service and of its transactions runs on it (see ``OperationPath``).
final class ServiceRuntime: Sendable {
    let configuration: PostgresService.Configuration
    let pool: ConnectionPool
    let sessions: SessionContext
    let upserts: UpsertCache
    /// What a fetch naming no ``Loading`` loads (read per fetch: kept apart from the configuration's copy).
    let defaultLoading: Loading
    /// The one listening connection, opened when the first observer needs it.
    let listener: ChangeListener
    let telemetry: Telemetry

    init(configuration: PostgresService.Configuration) throws {
        self.configuration = configuration
        let telemetry = Telemetry(configuration: configuration)
        self.telemetry = telemetry
        let pool = try ConnectionPool(
            settings: configuration.connection, options: configuration.pool, logger: configuration.logger, telemetry: telemetry)
        self.pool = pool
        sessions = SessionContext(configuration: configuration, canceller: pool.canceller, telemetry: telemetry)
        upserts = UpsertCache(catalog: sessions.catalog)
        defaultLoading = configuration.defaultLoading
        listener = ChangeListener(reconnectPatience: configuration.listenerReconnectTimeout, logger: configuration.logger) {
            try await pool.settings.connect(timeout: pool.connectTimeout, logger: pool.logger)
        }
    }

    var logger: Logger { configuration.logger }

    /// Runs `body` on a session of a pooled connection. A failed statement may have left a transaction open
    /// (a script's `BEGIN`): the session is rolled back then, so that no connection goes back to the pool so.
    /// `span`: the operation's, which notes a wait for a connection.
    func withSession<T>(_ span: OperationSpan? = nil, _ body: (DatabaseSession) async throws -> T) async throws -> T {
        let asked = span == nil ? nil : ContinuousClock.now
        return try await pool.withConnection { connection in
            if let asked, let span {
                let waited = ContinuousClock.now - asked
                if waited > .milliseconds(1) {
                    span.event("waited for a connection", ["db.client.connection.wait_time_ms": .double(Double(waited.nanoseconds) / 1e6)])
                }
            }
            let session = DatabaseSession(connection: connection, context: sessions)
            do {
                return try await body(session)
            } catch let error as StructPostgresError where error.sqlState != nil {
                await session.rollBack()
                throw error
            }
        }
    }

    /// A session on a connection of its own, outside the pool (see ``ConnectionPool/withDedicatedConnection(_:)``).
    func withDedicatedSession<T>(_ body: (DatabaseSession) async throws -> T) async throws -> T {
        try await pool.withDedicatedConnection { try await body(DatabaseSession(connection: $0, context: sessions)) }
    }

    /// Forgets table layouts, prepared statements and upsert plans: they may no longer match a changed schema.
    func forgetSchemas() {
        sessions.forgetSchemas()
        upserts.forget()
    }
}
