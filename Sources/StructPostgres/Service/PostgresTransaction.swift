import PostgresNIO
import Synchronization

/// The service inside a transaction: the same fetch, update, delete and count, on the transaction's
/// connection. Handed to the closure of ``PostgresService/transaction(_:_:)``; unusable after it returns.
///
/// ``transaction(_:)`` nests a savepoint: its failure rolls back only what it did.
public final class PostgresTransaction: CoreDataServiceProtocol {
    enum State { case active, suspended, finished }

    let session: DatabaseSession
    let depth: Int
    private let state = Mutex<State>(.active)

    private init(session: DatabaseSession, depth: Int) {
        self.session = session
        self.depth = depth
    }

    static func run<T>(
        on session: DatabaseSession, options: TransactionOptions, _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await session.execute(statement: options.beginSQL)
        let transaction = PostgresTransaction(session: session, depth: 0)
        defer { transaction.finish() }
        let result: T
        do {
            result = try await body(transaction)
            transaction.finish()
        } catch {
            transaction.finish()
            await session.rollBack()
            throw error
        }
        do {
            try await session.commit()
        } catch {
            await session.rollBack()
            throw error
        }
        return result
    }

    /// Runs `body` inside a savepoint: if it throws, only its work is rolled back and the error is
    /// rethrown; this transaction goes on. While it runs, use the inner transaction, not this one.
    @discardableResult
    public func transaction<T>(_ body: (PostgresTransaction) async throws -> T) async throws -> T {
        try suspend()
        let name = "structpg_sp_\(depth + 1)"
        do {
            try await session.execute(statement: "SAVEPOINT \(name)")
        } catch {
            state.withLock { $0 = .active }
            throw error
        }
        let inner = PostgresTransaction(session: session, depth: depth + 1)
        defer {
            inner.finish()
            state.withLock { if $0 == .suspended { $0 = .active } }
        }
        do {
            let result = try await body(inner)
            inner.finish()
            try await session.execute(statement: "RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            inner.finish()
            try? await session.execute(statement: "ROLLBACK TO SAVEPOINT \(name)", evenIfCancelled: true)
            throw error
        }
    }

    /// Runs SQL text inside the transaction: no parameters, several statements allowed.
    public func execute(unsafeSQL sql: String) async throws {
        try ensureActive()
        try await session.execute(script: sql)
    }

    // MARK: CoreDataServiceProtocol

    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter?, sortedBy sort: [SortKey], limit: Int?, offset: Int?, loading: Loading
    ) async throws -> [Model] {
        try ensureActive()
        return try await EntityOperations.fetch(session, FetchRequest(filter: filter, sort: sort, limit: limit, offset: offset), loading)
    }

    public func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Bool {
        try ensureActive()
        return try await session.exists(Model.Entity.self, filter: filter)
    }

    @discardableResult
    public func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int {
        try ensureActive()
        return try await session.deleteAll(Model.Entity.self, filter: filter)
    }

    public func count<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int {
        try ensureActive()
        return try await session.count(Model.Entity.self, filter: filter)
    }

    @discardableResult
    public func update<Model: EntityConvertible>(entities: [Model], options: UpsertOptions) async throws -> UpsertResult {
        try ensureActive()
        if entities.count > DatabaseSession.rowsPerStatement {
            return try await transaction { try await EntityOperations.writeInSlices(entities, in: $0.session, options: options) }
        }
        let work = try EntityOperations.unitOfWork(entities[...], inParallel: true)
        guard work.statementCount > 1 else { return try await EntityOperations.write(work, in: session, options: options) }
        // Several statements: a savepoint keeps the batch all-or-nothing even if the caller catches the error.
        return try await transaction { try await EntityOperations.write(work, in: $0.session, options: options) }
    }

    @discardableResult
    public func delete<Model: EntityConvertible>(entities: [Model]) async throws -> Int {
        try ensureActive()
        return try await EntityOperations.delete(entities, in: session)
    }

    private func finish() { state.withLock { $0 = .finished } }

    /// Checks that this transaction is usable and marks it as having a nested one open, atomically,
    /// so two concurrent nested transactions cannot both take the same savepoint name.
    private func suspend() throws {
        let previous = state.withLock { state -> State in
            defer { if state == .active { state = .suspended } }
            return state
        }
        guard previous == .active else { try ensureActive(); return }
    }

    func ensureActive() throws {
        let current = state.withLock { $0 }
        switch current {
        case .active: return
        case .suspended:
            throw StructPostgresError(
                .transactionMisuse, "this transaction has a nested transaction open; use the value passed to the nested closure")
        case .finished:
            throw StructPostgresError(
                .transactionMisuse, "the transaction has ended; a transaction cannot be used outside its closure")
        }
    }
}

extension DatabaseSession {
    /// Runs `sql`, without parameters; `evenIfCancelled`: also in a cancelled task, without cancelling it.
    func execute(statement sql: String, evenIfCancelled: Bool = false) async throws {
        var statement = Statement(sql: sql)
        statement.runsWhenCancelled = evenIfCancelled
        _ = try await run(statement)
    }

    /// Rolls the connection's transaction back, also in a cancelled task; a connection where that fails is
    /// closed, so that it never goes back to the pool inside a transaction.
    func rollBack() async {
        do {
            try await execute(statement: "ROLLBACK", evenIfCancelled: true)
        } catch {
            if !connection.isClosed { connection.close().whenComplete { _ in } }
        }
    }

    /// Sends COMMIT and checks that PostgreSQL did commit: after a failed statement whose error the
    /// closure caught, PostgreSQL answers COMMIT with ROLLBACK, which must not pass for success.
    ///
    /// A task cancelled before COMMIT never sends it. COMMIT itself is not cancelled: once sent, its outcome
    /// is reported as it is.
    func commit() async throws {
        let result: PostgresQueryResult
        let start = ContinuousClock.now
        if Task.isCancelled {
            throw StructPostgresError(.queryCancelled, "the task was cancelled before COMMIT; the transaction was rolled back", sql: "COMMIT")
        }
        runtime.logger.debug("query", metadata: ["sql": "COMMIT", "binds": "0"])
        do {
            try ensureOpen(sql: "COMMIT")
            result = try await connection.query("COMMIT", logger: runtime.logger).get()
            observe(Statement(sql: "COMMIT"), since: start, failed: false)
        } catch {
            observe(Statement(sql: "COMMIT"), since: start, failed: true)
            throw StructPostgresError.from(error, sql: "COMMIT")
        }
        if result.metadata.command == "ROLLBACK" {
            throw StructPostgresError(
                .server,
                "the transaction was rolled back, not committed: a statement in it failed and its error was caught inside the closure",
                sqlState: "25P02", sql: "COMMIT")
        }
    }
}
