import Logging
import PostgresNIO
import StructPostgresCore

/// The cells of a result, filled on the connection's event loop only, and read once the query has completed.
private final class CellCollector: @unchecked Sendable {
    package var cells = ResultCells()
}

/// The session layer: runs statements on one connection (the pool's, for a single call, or a transaction's),
/// prepares them once per connection, stops them when the task is cancelled, and maps errors.
package struct DatabaseSession: Sendable {
    package let connection: PostgresConnection
    package let context: SessionContext
    /// Stops the statement of a cancelled task (its pool's: it knows the host).
    package let canceller: StatementCanceller
    /// Statements with parameters are prepared under a name (see ``PreparedStatementRegistry``); `false`: sent
    /// unnamed.
    package var namesStatements = true
    /// The lease of a pooled connection this session runs on, for a call that may run again; `nil`: it may not.
    package var lease: LeaseRecord?

    package init(connection: PostgresConnection, context: SessionContext, canceller: StatementCanceller) {
        (self.connection, self.context, self.canceller) = (connection, context, canceller)
    }

    /// Sends `statement` and reads all its rows.
    package func run(_ statement: Statement) async throws -> [PostgresRow] {
        try await send(statement) { name in
            guard let name else {
                return try await connection.query(
                    PostgresQuery(unsafeSQL: statement.sql, binds: statement.bindings), logger: context.logger
                ).get().rows
            }
            var collected: [PostgresRow] = []
            for try await row in try await NamedStatement.execute(statement, named: name, on: connection, logger: context.logger) {
                collected.append(row)
            }
            return collected
        }
    }

    /// Sends a PostgresNIO query (its values bound) and reads all its rows.
    package func run(_ query: PostgresQuery) async throws -> [PostgresRow] {
        var statement = Statement(sql: query.sql)
        statement.bindings = query.binds
        return try await run(statement)
    }

    /// Runs `statement` and collects the cells of its rows, without keeping the rows themselves. An unprepared
    /// statement's cells are collected on the connection's event loop as the rows arrive, without handing each
    /// row over to this task.
    package func runCells(_ statement: Statement) async throws -> ResultCells {
        try await send(statement) { name in
            if let name {
                return try await ResultCells(
                    try await NamedStatement.execute(statement, named: name, on: connection, logger: context.logger))
            }
            return try await collectCells(PostgresQuery(unsafeSQL: statement.sql, binds: statement.bindings)).get()
        }
    }

    /// Starts `query` and collects its rows' cells on the connection's event loop as they arrive. Nothing
    /// holds the rows back (PostgresNIO's back-pressure is not involved), so the result must be of bounded
    /// size: a fetch, or a batch of a cursor. The query is written on the event loop, after checking there that
    /// the connection is open (see ``EventLoopExecutor``).
    package func collectCells(_ query: PostgresQuery) -> EventLoopFuture<ResultCells> {
        let (connection, logger) = (self.connection, context.logger)
        let loop = connection.eventLoop
        @Sendable func start() -> EventLoopFuture<ResultCells> {
            guard !connection.isClosed else { return loop.makeFailedFuture(PostgresConnection.closed(sql: query.sql)) }
            let collector = CellCollector()
            return connection.query(query, logger: logger) { collector.cells.append($0) }.map { _ in collector.cells }
        }
        return loop.inEventLoop ? start() : loop.flatSubmit(start)
    }

    /// Sends a statement that returns no rows (`DELETE`, `UPDATE`) and gives back how many rows it affected,
    /// read from the server's command tag. Never prepared: PostgresNIO hands a prepared statement's command tag
    /// back only through a path that traps when the statement has no rows to read (`PSQLRowStream.commandTag`
    /// before the rows are consumed; no upstream issue found; canary: `aPreparedStatementsCommandTagStillTraps`).
    package func affectedRows(_ statement: Statement) async throws -> Int {
        try await send(statement, prepared: false) { _ in
            let query = PostgresQuery(unsafeSQL: statement.sql, binds: statement.bindings)
            return try await connection.query(query, logger: context.logger).get().metadata.rows ?? 0
        }
    }

    /// Logs, sends and observes `statement`; `perform` executes it, under a prepared statement's name when
    /// one is given. Errors come back as ``StructPostgresError``.
    /// Unless `prepared` is `false`, a statement with parameters is prepared on the connection the first time
    /// (see ``PreparedStatementRegistry``).
    private func send<T>(
        _ statement: Statement, prepared: Bool = true, _ perform: (String?) async throws -> T
    ) async throws -> T {
        let first = lease?.noteStatement() ?? false
        if !statement.runsWhenCancelled {
            try checkCancellation(before: statement.sql)
            do {
                try await canceller.learnBackend(of: connection)
            } catch {
                var failure = StructPostgresError.from(error, sql: statement.sql)
                failure.delivery = StatementDelivery(
                    written: !(failure.underlying is ConnectionClosedBeforeWriting), endedUnread: false, first: first,
                    cancelled: Task.isCancelled)
                throw failure
            }
        }
        let logBoundValues = context.logBoundValues
        if context.logger.logLevel <= .debug {
            let sql = logBoundValues ? statement.sql : maskingLiterals(statement.sql)
            var metadata: Logger.Metadata = ["sql": "\(sql)", "binds": "\(statement.bindings.count)"]
            if logBoundValues {
                metadata["values"] = "\(statement.values.map(\.keyDescription).joined(separator: ", "))"
            }
            context.logger.debug("query", metadata: metadata)
        }
        let start = context.queryObserver == nil ? nil : ContinuousClock.now
        let prepares =
            prepared && namesStatements && context.preparesStatements && !statement.types.isEmpty && !statement.plannedPerExecution
        let key = prepares ? statement.preparedKey ?? PreparedStatementRegistry.Key(sql: statement.sql, types: statement.types) : nil
        let name = key.flatMap { context.preparedStatements.name(for: $0) }
        do {
            let result: T
            if statement.runsWhenCancelled {
                result = try await connection.sendingOnEventLoop(sql: statement.sql) {
                    try await performToTheEnd(statement.sql) { try await perform(name) }
                }
            } else {
                result = try await context.telemetry.measureStatement(statement.sql) {
                    try await canceller.cancellable(on: connection, sql: statement.sql) {
                        try await connection.sendingOnEventLoop(sql: statement.sql) {
                            try await performToTheEnd(statement.sql) { try await perform(name) }
                        }
                    }
                }
            }
            observe(statement, since: start, failed: false)
            return result
        } catch {
            let endedUnread = lease?.takeEndedUnread() ?? false
            observe(statement, since: start, failed: true)
            let sqlState = (error as? PSQLError)?.serverInfo?[.sqlState]
            if let name, let key { context.preparedStatements.failed(key, name: name, sqlState: sqlState) }
            if name != nil, let sqlState, sqlState == "42P05" || sqlState == "26000" {
                throw preparedStatementRefused(sqlState, sql: statement.sql)
            }
            var mapped =
                Task.isCancelled && !statement.runsWhenCancelled
                ? Self.cancelled(error, sql: statement.sql)
                : StructPostgresError.from(error, sql: statement.sql, revealValues: logBoundValues)
            mapped.delivery = StatementDelivery(
                written: !(mapped.underlying is ConnectionClosedBeforeWriting), endedUnread: endedUnread, first: first,
                cancelled: Task.isCancelled)
            context.logger.debug("query failed", metadata: ["error": "\(mapped)"])
            throw mapped
        }
    }

    /// Runs `perform`, which sends one statement, and returns once the server is ready for the next: a statement
    /// outside a transaction is committed only then (see ``ReadyForQueryWatcher``). An error raised by that commit
    /// is thrown as the statement's; a connection lost before it, as an unknown outcome. On the event loop.
    private func performToTheEnd<T>(_ sql: String, _ perform: () async throws -> T) async throws -> T {
        let watcher = ReadyForQueryWatcher.forceFallback ? nil : ReadyForQueryWatcher.of(connection, logger: context.logger)
        let mark = watcher?.mark ?? 0
        let result: T
        do {
            result = try await perform()
        } catch {
            if let lease, let watcher, watcher.endedSessionBeforeReading(since: mark) { lease.noteEndedUnread() }
            throw error
        }
        let outcome: ReadyForQueryWatcher.Outcome
        switch watcher?.outcomeOfLastStatement() ?? .now(.unknown) {
        case .now(let known): outcome = known
        case .later(let future): outcome = try await future.get()
        }
        switch outcome {
        case .ready:
            return result
        case .failedAtCommit(let fields):
            throw Self.commitFailed(fields, sql: context.logBoundValues ? sql : maskingLiterals(sql), revealValues: context.logBoundValues)
        case .lost:
            throw Self.lostBeforeTheEnd(sql: sql)
        case .unknown:
            // No watcher (or one that lost track): a second statement is sent only once the first has ended.
            do {
                _ = try await connection.query(PostgresQuery(unsafeSQL: ""), logger: context.logger).get()
            } catch {
                throw Self.lostBeforeTheEnd(sql: sql)
            }
            return result
        }
    }

    /// The error PostgreSQL raised after a statement completed, when its implicit transaction committed: a
    /// deferred constraint, a serialization failure. An error that ends the session instead (the server shutting
    /// down while it waits for a synchronous standby) leaves the outcome unknown: the commit may have happened.
    package static func commitFailed(_ fields: [UInt8: String], sql: String, revealValues: Bool) -> StructPostgresError {
        let severity = fields[UInt8(ascii: "V")] ?? fields[UInt8(ascii: "S")] ?? "ERROR"
        let state = fields[UInt8(ascii: "C")] ?? ""
        guard severity == "ERROR", !state.hasPrefix("08"), !state.hasPrefix("57"),
            var error = ServerFields(codes: fields).error(sql: sql, revealValues: revealValues)
        else {
            return lostBeforeTheEnd(sql: sql)
        }
        error.message += " (raised when the statement's transaction committed: nothing was stored)"
        return error
    }

    package static func lostBeforeTheEnd(sql: String) -> StructPostgresError {
        StructPostgresError(
            .connectionLost,
            "the connection was lost after the statement ran and before the server confirmed its commit, so whether it was committed is unknown; check before running it again",
            sql: maskingLiterals(sql))
    }

    /// A prepared statement the server session did not have, or had already: the connection goes through a
    /// pooler in transaction mode (PgBouncer before 1.21). Statements are sent unnamed from now on, and the call
    /// runs again (see ``ServiceRuntime/withSession(_:_:_:)``): the statement did not execute.
    private func preparedStatementRefused(_ sqlState: String, sql: String) -> StructPostgresError {
        if context.stopPreparing() {
            context.logger.warning(
                "prepared statements are not kept between statements: this looks like a pooler in transaction mode (PgBouncer). Statements are sent unnamed from now on; set pool_mode=transaction in the URL (or ConnectionSettings.poolMode) to say so and skip this check",
                metadata: ["sqlstate": "\(sqlState)"])
        }
        var error = StructPostgresError(
            .server, "the server session did not keep the prepared statement (a pooler in transaction mode?); set pool_mode=transaction",
            sqlState: sqlState, sql: maskingLiterals(sql))
        error.underlying = PreparedStatementRefused()
        return error
    }

    /// Runs SQL without parameters, statement by statement; a failure names the statement's line.
    package func execute(script: String) async throws {
        let statements = SQLScript.split(script)
        for statement in statements {
            do {
                _ = try await run(Statement(sql: statement.sql))
            } catch var error as StructPostgresError where statements.count > 1 {
                error.message += " (statement at line \(statement.line) of the script)"
                throw error
            }
        }
    }

    /// Refuses to send `sql` once the task has been cancelled: a cancelled transaction sends nothing more.
    package func checkCancellation(before sql: String) throws {
        if Task.isCancelled {
            throw StructPostgresError(.queryCancelled, "the task was cancelled; the statement was not sent", sql: maskingLiterals(sql))
        }
    }

    /// The error of a statement whose task was cancelled while it ran: the connection was closed under it and
    /// the server asked to cancel it (see ``StatementCanceller``, whose error says what reached the server), unless it
    /// failed for a reason of its own.
    package static func cancelled(_ error: any Error, sql: String) -> StructPostgresError {
        var mapped = StructPostgresError.from(error, sql: sql)
        if mapped.underlying is StatementCanceller.Stopped {
            // The canceller's own account: what reached the server, or the deadline.
            mapped.sql = maskingLiterals(sql)
            return mapped
        }
        guard mapped.code == .connectionLost || mapped.code == .queryCancelled || mapped.code == .client else { return mapped }
        return StatementCanceller.cancelled(reached: nil, sql: sql)
    }

    package func observe(_ statement: Statement, since start: ContinuousClock.Instant?, failed: Bool) {
        guard let start, let observer = context.queryObserver else { return }
        observer(
            QueryEvent(
                sql: statement.sql, parameterCount: statement.bindings.count,
                duration: ContinuousClock.now - start, failed: failed))
    }
}

/// Marks the error of a statement a pooler refused before it ran (see `preparedStatementRefused`).
package struct PreparedStatementRefused: Error, Sendable {}

/// A session shows which connection it runs on, not the connection itself, whose settings hold the password.
extension DatabaseSession: CustomReflectable {
    package var customMirror: Mirror { Mirror(self, children: ["connection": connection.id], displayStyle: .struct) }
}
