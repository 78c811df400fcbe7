/// The one path every operation of ``PostgresService`` and ``PostgresTransaction`` takes from the front door to a
/// session. It knows where operations run (each on a pooled connection of its own, or in a given transaction)
/// and performs them there; what concerns every operation (spans and metrics, replica routing, coalescing)
/// belongs here, once.
///
/// You do not create one: it is what ``PostgresAccess`` types share.
struct OperationPath: Sendable {
    let runtime: ServiceRuntime
    /// The transaction the operations run in; `nil`: each runs on a pooled connection of its own.
    let transaction: TransactionState?
    /// Reads go to the primary even when there are replicas.
    var pinnedToPrimary = false

    init(runtime: ServiceRuntime, transaction: TransactionState?) {
        self.runtime = runtime
        self.transaction = transaction
    }

    /// Performs `operation` with one session: the transaction's, or a pooled connection's for its duration. Outside a
    /// transaction, a write (one statement, which PostgreSQL rolls back whole) is sent again after a deadlock or
    /// serialization failure, as a transaction is: concurrent batches that lock the same rows in different orders
    /// then all complete.
    func perform<T>(_ operation: Operation, _ body: (DatabaseSession) async throws -> T) async throws -> T {
        try await runtime.telemetry.measure(operation) { span in
            if let transaction {
                try transaction.ensureActive()
                return try await body(transaction.session)
            }
            switch operation.kind {
            case .upsert, .delete, .deleteAll:
                return try await retrying(maxRetries: nil, span) { try await runtime.withSession(span, route(operation), atomic: true, body) }
            default:
                return try await runtime.withSession(span, route(operation), body)
            }
        }
    }

    /// Where `operation` runs when it is not in a transaction: reads on a replica unless pinned, the rest on the primary.
    func route(_ operation: Operation) -> ServiceRuntime.Route {
        guard operation.isRead, !pinnedToPrimary, !runtime.router.replicas.isEmpty else { return .primary }
        return .replica(idempotent: operation.kind != .stream)
    }

    /// A copy of this path that runs every operation on the primary, reads included.
    func onPrimaryOnly() -> OperationPath {
        var path = self
        path.pinnedToPrimary = true
        return path
    }

    /// Performs `operation`, whose statements must all take effect or none: in a transaction of its own (retried
    /// after a serialization failure or deadlock), or in a savepoint of the given transaction.
    func performAtomically<T>(_ operation: Operation, _ body: (DatabaseSession) async throws -> T) async throws -> T {
        try await runtime.telemetry.measure(operation) { span in
            try await runTransaction(TransactionOptions(), span) { try await body($0.session) }
        }
    }

    /// Runs `body` in a transaction: from the pool, a new one (`BEGIN` with `options`), run again after a
    /// serialization failure or deadlock; in a transaction, a savepoint of it (`options` do not apply).
    func transaction<T>(_ options: TransactionOptions, _ body: (TransactionState) async throws -> T) async throws -> T {
        try await runtime.telemetry.measure(Operation(.transaction)) { span in try await runTransaction(options, span, body) }
    }

    private func runTransaction<T>(
        _ options: TransactionOptions, _ span: OperationSpan?, _ body: (TransactionState) async throws -> T
    ) async throws -> T {
        if let transaction { return try await transaction.savepoint(body) }
        return try await retrying(maxRetries: options.maxRetries, span) {
            try await runtime.withSession(span, atomic: true) { session in
                try await TransactionState.run(on: session, options: options, body)
            }
        }
    }

    /// Runs `work` again after a serialization failure or deadlock, at most `maxRetries` times (by default the
    /// configuration's `maxTransactionRetries`), after a random delay that grows with each attempt.
    func retrying<T>(maxRetries: Int?, _ span: OperationSpan?, _ work: () async throws -> T) async throws -> T {
        let retries = max(0, maxRetries ?? runtime.configuration.maxTransactionRetries)
        var attempt = 0
        while true {
            do {
                return try await work()
            } catch let error as StructPostgresError where error.isRetryable && attempt < retries && !Task.isCancelled {
                attempt += 1
                runtime.logger.debug(
                    "transaction retried", metadata: ["attempt": "\(attempt)", "sqlstate": "\(error.sqlState ?? "")"])
                span?.event("transaction retried", ["db.response.status_code": .string(error.sqlState ?? ""), "structpg.attempt": .int64(Int64(attempt))])
                do {
                    try await Task.sleep(for: StructPostgresError.retryDelay(after: attempt))
                } catch {
                    throw StructPostgresError.from(error, sql: nil)
                }
            }
        }
    }

    /// The path of the operations of `transaction`: the same runtime, each operation run in the transaction.
    func path(inside transaction: TransactionState) -> OperationPath {
        OperationPath(runtime: runtime, transaction: transaction)
    }
}
