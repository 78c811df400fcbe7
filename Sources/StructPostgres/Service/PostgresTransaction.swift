import StructPostgresCore
import StructPostgresDriver

/// The service inside a transaction: every operation of ``PostgresAccess``, on the transaction's connection.
/// Handed to the closure of ``PostgresService/transaction(_:_:)``; unusable after it returns.
///
/// ``transaction(_:)`` nests a savepoint: its failure rolls back only what it did.
public final class PostgresTransaction: OperationPathOwner {
    let path: OperationPath

    init(_ path: OperationPath) { self.path = path }

    /// Runs `body` inside a savepoint: if it throws, only its work is rolled back and the error is
    /// rethrown; this transaction goes on. While it runs, use the inner transaction, not this one.
    @discardableResult
    public func transaction<T>(_ body: (PostgresTransaction) async throws -> T) async throws -> T {
        try await path.transaction(TransactionOptions()) { try await body(PostgresTransaction(path.path(inside: $0))) }
    }
}
