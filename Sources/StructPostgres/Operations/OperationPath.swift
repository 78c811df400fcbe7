import StructPostgresCore
import StructPostgresDriver

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
            return try await session(for: operation, span, body)
        }
    }

    /// Runs `body` on a pooled session for `operation`, already measured under `span`: the one place where the path
    /// reaches the runtime outside a transaction, for single calls, coalesced batches, point reads and streams.
    /// ``SendAgain`` decides whether a failed call runs again; a write (one statement, which PostgreSQL rolls back
    /// whole) runs again after a deadlock or serialization failure, as a transaction does.
    func session<T>(for operation: Operation, _ span: OperationSpan?, _ body: (DatabaseSession) async throws -> T) async throws -> T {
        switch operation.kind {
        case .upsert, .delete, .deleteAll:
            return try await runtime.withSession(
                span, route(operation), atomic: true, transactionRetries: runtime.configuration.maxTransactionRetries, body)
        default:
            return try await runtime.withSession(span, route(operation), body)
        }
    }

    /// Runs `body` on a connection of its own to the primary, outside the pool (a migration: it changes session
    /// settings, and holds its lock on a second connection). ``SendAgain`` decides, as for pooled calls, whether a
    /// failed attempt runs again: when its first statement never ran, or the primary moved before it began.
    func dedicatedSession<T>(_ body: (DatabaseSession) async throws -> T) async throws -> T {
        try await runtime.withSession(dedicated: true, body)
    }

    /// Measures `operation` (its span and metrics) around `body`, which runs its sessions through this path.
    func measure<T>(_ operation: Operation, _ body: (OperationSpan) async throws -> T) async throws -> T {
        try await runtime.telemetry.measure(operation, body)
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
        return try await runtime.withSession(
            span, atomic: true, transactionRetries: options.maxRetries ?? runtime.configuration.maxTransactionRetries
        ) { session in
            try await TransactionState.run(on: session, options: options, body)
        }
    }

    /// The path of the operations of `transaction`: the same runtime, each operation run in the transaction.
    func path(inside transaction: TransactionState) -> OperationPath {
        OperationPath(runtime: runtime, transaction: transaction)
    }
}
