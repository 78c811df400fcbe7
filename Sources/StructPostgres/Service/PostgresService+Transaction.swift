extension PostgresService {
    /// Runs `body` in one transaction: it commits when `body` returns and rolls back when it throws.
    ///
    /// A serialization failure (40001) or deadlock (40P01) rolls back and runs `body` again, at most
    /// ``TransactionOptions/maxRetries`` times, so `body` must be safe to repeat. The value handed to
    /// `body` is not the pool: every call on it runs inside the transaction, and it refuses work once
    /// the transaction has ended.
    ///
    /// ```swift
    /// try await service.transaction(.init(isolation: .serializable)) { tx in
    ///     var account = try await tx.fetch(Account.self, where: .equal("uuid", id), sortedBy: [], limit: 1)[0]
    ///     account.balance -= 10
    ///     try await tx.update(entities: [account])
    /// }
    /// ```
    @discardableResult
    public func transaction<T>(
        _ options: TransactionOptions = .init(), _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        let retries = max(0, options.maxRetries ?? configuration.maxTransactionRetries)
        var attempt = 0
        while true {
            do {
                return try await withSession { session in
                    try await PostgresTransaction.run(on: session, options: options, body)
                }
            } catch let error as StructPostgresError where error.isRetryable && attempt < retries && !Task.isCancelled {
                attempt += 1
                configuration.logger.debug(
                    "transaction retried", metadata: ["attempt": "\(attempt)", "sqlstate": "\(error.sqlState ?? "")"])
                do {
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << min(attempt, 6)))))
                } catch {
                    throw StructPostgresError.from(error, sql: nil)
                }
            }
        }
    }

    /// Runs `body` in a transaction with the given isolation level and access mode.
    @discardableResult
    public func transaction<T>(
        isolation: TransactionOptions.Isolation?, readOnly: Bool = false,
        _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await transaction(TransactionOptions(isolation: isolation, readOnly: readOnly), body)
    }
}
