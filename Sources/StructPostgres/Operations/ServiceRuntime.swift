import Logging
import PostgresNIO

/// One service's engine, below its front door: the connections, what its sessions share, and the write
/// layer's caches. Every operation of the service and of its transactions runs on it (see ``OperationPath``).
final class ServiceRuntime: Sendable {
    let configuration: PostgresConfiguration
    let router: ConnectionRouter
    let sessions: SessionContext
    let upserts: UpsertCache
    let coalescer: Coalescer
    /// What a fetch naming no ``Loading`` loads (read per fetch: kept apart from the configuration's copy).
    let defaultLoading: Loading
    /// The one listening connection, opened when the first observer needs it.
    let listener: ChangeListener
    let telemetry: Telemetry
    /// What runs in the background, inside ``PostgresService/run()``.
    let background: BackgroundTasks
    /// Seals and opens the cursors of pages (``Page``), with the configured secret's key or one of this service's.
    let cursorSeal: PageCursorSeal

    init(configuration given: PostgresConfiguration) throws {
        let configuration = Self.withoutValuesInLogs(given)
        self.configuration = configuration
        let telemetry = Telemetry(configuration: configuration)
        self.telemetry = telemetry
        let background = BackgroundTasks()
        self.background = background
        let router = try ConnectionRouter(configuration: configuration, telemetry: telemetry, background: background)
        self.router = router
        let sessions = SessionContext(configuration: configuration, telemetry: telemetry)
        self.sessions = sessions
        upserts = UpsertCache(catalog: sessions.catalog)
        coalescer = Coalescer(writes: configuration.coalescing, reads: configuration.readCoalescing, background: background)
        defaultLoading = configuration.defaultLoading
        cursorSeal = PageCursorSeal(secret: configuration.pageCursorSecret)
        let listening = configuration.listenerConnection
        let (timeout, logger) = (configuration.pool.connectTimeout, configuration.logger)
        listener = ChangeListener(reconnectPatience: configuration.listenerReconnectTimeout, logger: configuration.logger, background: background) {
            if let listening { return try await listening.connect(timeout: listening.connectTimeout ?? timeout, logger: logger) }
            if configuration.connection.poolMode == .transaction {
                throw StructPostgresError(
                    .invalidConfiguration,
                    "observing needs LISTEN on a session of its own, which a transaction pooler (pool_mode=transaction) does not keep: set Configuration.listenerConnection to the server's own address")
            }
            let pool = try await router.primary()
            return try await pool.settings.connect(timeout: pool.connectTimeout, logger: pool.logger)
        } notify: { channel in
            let pool = try await router.primary()
            try await pool.withConnection { connection in
                var statement = Statement(sql: "SELECT pg_notify($1, '')")
                statement.append(.text(channel))
                var session = DatabaseSession(connection: connection, context: sessions, canceller: pool.canceller)
                session.namesStatements = false
                _ = try await session.run(statement)
            }
        }
    }

    var logger: Logger { configuration.logger }

    /// PostgresNIO logs every message from the server at `trace`, the values in a row or an error's DETAIL
    /// included: without `logBoundValues`, the service's logger goes no lower than `debug`.
    private static func withoutValuesInLogs(_ configuration: PostgresConfiguration) -> PostgresConfiguration {
        guard !configuration.logBoundValues, configuration.logger.logLevel < .debug else { return configuration }
        var quieter = configuration
        quieter.logger.logLevel = .debug
        return quieter
    }

    /// Where a session's connection comes from.
    enum Route: Sendable {
        /// The primary: writes, transactions, raw SQL, pinned reads.
        case primary
        /// A replica in turn, or the primary when none is usable. `idempotent`: the read may run again after its
        /// connection failed midway (a fetch; not a stream that has yielded rows).
        case replica(idempotent: Bool)
    }

    /// Runs `body` on a session of a pooled connection. A failed statement may have left a transaction open
    /// (a script's `BEGIN`): the session is rolled back then, so that no connection goes back to the pool so.
    /// `span`: the operation's, which notes a wait for a connection.
    ///
    /// A read on a replica that turns out to be down runs again elsewhere; a primary that is gone is looked for
    /// again among the listed hosts, and a call that never reached it runs again on the new one. A call whose
    /// statement never ran (its connection had closed, or the server had ended the session unread: a restart, a
    /// failover, an idle timeout) runs again on another connection, when it was the call's first statement.
    /// While a failover or switchover leaves no host writable, the call waits for one as it would for a connection
    /// (up to the pool's `acquireTimeout`). `atomic`: `body` writes in one statement or one transaction, so that after a
    /// write refused by a former primary (SQLSTATE 25006) it runs again on the new one.
    func withSession<T>(
        _ span: OperationSpan? = nil, _ route: Route = .primary, atomic: Bool = false, _ body: (DatabaseSession) async throws -> T
    ) async throws -> T {
        var attempts = 0
        let patience = ContinuousClock.now + configuration.pool.acquireTimeout
        func mayWait() -> Bool { ContinuousClock.now < patience && !Task.isCancelled }
        while true {
            attempts += 1
            var sent = false
            let pool: ConnectionPool, replica: Replica?
            do {
                (pool, replica) = try await self.pool(for: route)
            } catch let error as StructPostgresError where router.awaitsAPrimary(after: error) && mayWait() {
                try await waitForAPrimary(attempts, error, span)
                continue
            }
            do {
                return try await session(on: pool, span) { session in
                    sent = true
                    return try await body(session)
                }
            } catch let error as StructPostgresError where error.underlying is PreparedStatementRefused && attempts <= 2 {
                // Nothing ran (the pooler refused the statement before it executed); statements now go unnamed.
                continue
            } catch let error as StructPostgresError
                        where atomic && replica == nil && error.sqlState == SQLState.readOnlySQLTransaction && mayWait() {
                guard await router.refusedByAFormerPrimary(pool) else { throw error }
                try await waitForAPrimary(attempts, error, span)
                continue
            } catch let error as StructPostgresError where ConnectionRouter.meansHostGone(error) || error.neverRan {
                // A statement that never ran may meet another closed connection: each is dropped, at most the pool's worth.
                guard attempts <= router.pools.count + (error.neverRan ? configuration.pool.maxConnections : 0) else { throw error }
                let hostGone = ConnectionRouter.meansHostGone(error)
                if let replica {
                    if hostGone { replica.set(.down(error.message), logger: logger) }
                    if case .replica(let idempotent) = route, idempotent || !sent || error.neverRan && pool.isRunning, !Task.isCancelled { continue }
                } else {
                    let searching = hostGone && router.primaryFailed(error)
                    if searching && !sent || error.neverRan && pool.isRunning, !Task.isCancelled { continue }
                }
                throw error
            }
        }
    }

    /// Waits a little (longer after each attempt, up to half a second) before looking for the primary again.
    private func waitForAPrimary(_ attempt: Int, _ error: StructPostgresError, _ span: OperationSpan?) async throws {
        logger.debug("waiting for a writable primary", metadata: ["attempt": "\(attempt)", "reason": "\(error.message)"])
        span?.event("waited for a writable primary", ["structpg.attempt": .int64(Int64(attempt))])
        do {
            try await Task.sleep(for: .milliseconds(min(500, 25 << min(attempt, 5))))
        } catch {
            throw StructPostgresError.from(error, sql: nil)
        }
    }

    private func pool(for route: Route) async throws -> (ConnectionPool, Replica?) {
        switch route {
        case .primary: (try await router.primary(), nil)
        case .replica: try await router.reader()
        }
    }

    private func session<T>(on pool: ConnectionPool, _ span: OperationSpan?, _ body: (DatabaseSession) async throws -> T) async throws -> T {
        let asked = span?.span == nil ? nil : ContinuousClock.now
        let metrics = span.map { $0.metrics } ?? telemetry.metrics
        return try await pool.withConnection(reportingTo: metrics) { connection in
            if let asked, let span {
                let waited = ContinuousClock.now - asked
                if waited > .milliseconds(1) {
                    span.event("waited for a connection", ["db.client.connection.wait_time_ms": .double(Double(waited.nanoseconds) / 1e6)])
                }
            }
            var session = DatabaseSession(connection: connection, context: sessions, canceller: pool.canceller)
            session.lease = LeaseRecord(directToServer: pool.settings.poolMode == .session)
            do {
                return try await body(session)
            } catch let error as StructPostgresError where error.sqlState != nil {
                await session.rollBack()
                throw error
            }
        }
    }

    /// A session on a connection of its own to the primary, outside the pool (see
    /// ``ConnectionPool/withDedicatedConnection(_:)``).
    func withDedicatedSession<T>(_ body: (DatabaseSession) async throws -> T) async throws -> T {
        let pool = try await router.primary()
        return try await pool.withDedicatedConnection { try await body(DatabaseSession(connection: $0, context: sessions, canceller: pool.canceller)) }
    }

    /// Forgets table layouts, prepared statements and upsert plans: they may no longer match a changed schema.
    func forgetSchemas() {
        sessions.forgetSchemas()
        upserts.forget()
    }
}

/// What `dump` and a debugger show of a service: its configuration (the password masked, see
/// ``ConnectionSettings``), never the connection pools and their own copies of the settings.
extension ServiceRuntime: CustomReflectable {
    var customMirror: Mirror { Mirror(self, children: ["configuration": configuration], displayStyle: .class) }
}
