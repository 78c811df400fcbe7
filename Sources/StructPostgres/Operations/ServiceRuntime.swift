import Logging
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

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
        let sessions = SessionContext(configuration: configuration, telemetry: telemetry, schemaCaches: SchemaMemory())
        self.sessions = sessions
        upserts = UpsertCache(catalog: sessions.catalog)
        coalescer = Coalescer(writes: configuration.coalescing, reads: configuration.readCoalescing, background: background)
        defaultLoading = configuration.defaultLoading
        cursorSeal = PageCursorSeal(secret: configuration.pageCursorSecret)
        let listening = configuration.listenerConnection
        let (timeout, logger) = (configuration.pool.connectTimeout, configuration.logger)
        listener = ChangeListener(
            reconnectPatience: configuration.listenerReconnectTimeout, logger: configuration.logger, background: background
        ) {
            if let listening { return try await listening.connect(timeout: listening.connectTimeout ?? timeout, logger: logger) }
            if configuration.connection.poolMode == .transaction {
                throw StructPostgresError(
                    .invalidConfiguration,
                    "observing needs LISTEN on a session of its own, which a transaction pooler (pool_mode=transaction) does not keep: set Configuration.listenerConnection to the server's own address"
                )
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

    /// Where a session's connection comes from: the primary (writes, transactions, raw SQL, pinned reads), or a
    /// replica in turn (the primary when none is usable).
    typealias Route = SendAgain.Route

    /// Runs `body` on a session of a pooled connection. A failed statement may have left a transaction open
    /// (a script's `BEGIN`): the session is rolled back then, so that no connection goes back to the pool so.
    /// `span`: the operation's, which notes a wait for a connection and each retry.
    ///
    /// Whether a failed call runs again, and how, is ``SendAgain``'s answer: on another connection when its first
    /// statement never ran or its host went away before it was sent, after waiting for a primary during a failover
    /// or switchover (up to the pool's `acquireTimeout`), or whole after a serialization failure or deadlock.
    /// `atomic`: `body` writes in one statement or one transaction. `transactionRetries`: how many times `body` may
    /// run again after a serialization failure or deadlock (`nil`: never, as for reads).
    ///
    /// `dedicated`: on a connection of its own to the primary, outside the pool, opened for the call and closed after
    /// it (see ``ConnectionPool/withDedicatedConnection(_:)``), as migrations run.
    func withSession<T>(
        _ span: OperationSpan? = nil, _ route: Route = .primary, atomic: Bool = false, transactionRetries: Int? = nil,
        dedicated: Bool = false, _ body: (DatabaseSession) async throws -> T
    ) async throws -> T {
        var facts = SendAgain(failure: .other, stage: .findingAHost, route: route, atomic: atomic)
        facts.attempt = 0
        facts.maxTransactionRetries = transactionRetries.map { max(0, $0) }
        facts.hosts = router.poolCount
        facts.maxConnections = configuration.pool.maxConnections
        facts.primaryMayMove = router.primaryMayMove
        var patience = ContinuousClock.now + configuration.pool.acquireTimeout
        while true {
            facts.attempt += 1
            let pool: ConnectionPool
            let replica: Replica?
            do {
                (pool, replica) = try await self.pool(for: dedicated ? .primary : route)
            } catch let error as StructPostgresError {
                facts.stage = .findingAHost
                facts.failure = SendAgain.Failure(error)
                facts.connectionLost = error.code == .connectionLost
                facts.primaryFoundBefore = router.primaryFoundBefore
                facts.delivery = nil
                facts.withinPatience = ContinuousClock.now < patience
                facts.cancelled = Task.isCancelled
                guard facts.answer == .waitForAPrimary else { throw error }
                try await waitForAPrimary(facts.attempt, error, span)
                continue
            }
            var started = false
            let lease = LeaseRecord()
            do {
                if dedicated {
                    return try await pool.withDedicatedConnection { connection in
                        var session = DatabaseSession(connection: connection, context: sessions, canceller: pool.canceller)
                        session.lease = lease
                        started = true
                        return try await body(session)
                    }
                }
                return try await session(on: pool, lease, span) { session in
                    started = true
                    return try await body(session)
                }
            } catch let error as StructPostgresError {
                facts.stage = .running(bodyStarted: started)
                facts.failure = SendAgain.Failure(error)
                facts.delivery = error.delivery
                facts.throughPooler = pool.settings.poolMode != .session
                facts.poolRunning = pool.isRunning
                facts.withinPatience = ContinuousClock.now < patience
                facts.cancelled = Task.isCancelled
                if facts.failure == .hostGone {
                    if let replica { replica.set(.down(error.message), logger: logger) } else { router.primaryFailed(error) }
                }
                if facts.failure == .readOnly, atomic, replica == nil, facts.withinPatience, !facts.cancelled {
                    facts.refusedByAFormerPrimary = await router.refusedByAFormerPrimary(pool)
                }
                switch facts.answer {
                case .fail:
                    throw error
                case .sendAgain:
                    continue
                case .waitForAPrimary:
                    try await waitForAPrimary(facts.attempt, error, span)
                case .retryTransaction(let retry):
                    logger.debug("transaction retried", metadata: ["attempt": "\(retry)", "sqlstate": "\(error.sqlState ?? "")"])
                    span?.event(
                        "transaction retried",
                        ["db.response.status_code": .string(error.sqlState ?? ""), "structpg.attempt": .int64(Int64(retry))])
                    do {
                        try await Task.sleep(for: StructPostgresError.retryDelay(after: retry))
                    } catch {
                        throw StructPostgresError.from(error, sql: nil)
                    }
                    facts.transactionRetries = retry
                    facts.attempt = 0
                    patience = ContinuousClock.now + configuration.pool.acquireTimeout
                }
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

    private func session<T>(
        on pool: ConnectionPool, _ lease: LeaseRecord, _ span: OperationSpan?, _ body: (DatabaseSession) async throws -> T
    ) async throws -> T {
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
            session.lease = lease
            do {
                return try await body(session)
            } catch let error as StructPostgresError where error.sqlState != nil {
                await session.rollBack()
                throw error
            }
        }
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
