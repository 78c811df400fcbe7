import PostgresNIO

extension ServiceRuntime {
    /// Leases a pooled connection for `body`, waiting at most ``PoolOptions/acquireTimeout`` for one.
    ///
    /// `PostgresClient` waits for a free connection without bound. The lease is taken in a child task
    /// and handed over, so the wait can be raced against a timer and cancelled, while `body` runs in the
    /// caller's task and need not be `Sendable`.
    func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let handoff = AsyncStream<PostgresConnection>.makeStream()
        let release = AsyncStream<Never>.makeStream()
        let timeout = configuration.pool.acquireTimeout
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [client] in
                do {
                    try await client.withConnection { connection in
                        self.leaseStarted()
                        defer { self.leaseEnded() }
                        handoff.continuation.yield(connection)
                        handoff.continuation.finish()
                        for await _ in release.stream {}
                    }
                } catch {
                    handoff.continuation.finish()
                    throw error
                }
            }
            defer {
                release.continuation.finish()
                handoff.continuation.finish()
            }
            let outcome = try await withThrowingTaskGroup(of: LeaseOutcome.self) { race in
                race.addTask {
                    var iterator = handoff.stream.makeAsyncIterator()
                    return await iterator.next().map(LeaseOutcome.leased) ?? .failed
                }
                race.addTask {
                    try await Task.sleep(for: timeout)
                    return .timedOut
                }
                defer { race.cancelAll() }
                return try await race.next() ?? .failed
            }
            let connection: PostgresConnection
            switch outcome {
            case .leased(let leased):
                connection = leased
            case .failed:
                // The lease itself threw (the pool is closed or was never run): report its error.
                do { try await group.next() } catch { throw StructPostgresError.from(error, sql: nil) }
                throw StructPostgresError(.connectionLost, "the connection pool is not running")
            case .timedOut:
                group.cancelAll()
                try Task.checkCancellation()
                let size = configuration.pool.maxConnections
                if connectionsInUse < size { try await diagnoseConnection() }
                throw StructPostgresError(
                    .poolTimeout,
                    "no free connection within \(timeout): the pool holds at most \(size) connections and \(connectionsInUse) are in use")
            }
            return try await body(connection)
        }
    }

    /// Opens one connection outside the pool, so that a pool that keeps failing to connect reports why
    /// (refused, unknown host, wrong password) instead of a bare timeout.
    func diagnoseConnection() async throws {
        let settings = configuration.connection
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                on: PostgresClient.defaultEventLoopGroup.any(),
                configuration: try settings.connectionConfiguration(), id: 0, logger: logger
            ).get()
        } catch {
            var failure = StructPostgresError.from(error, sql: nil)
            if failure.code != .invalidConfiguration && failure.sqlState == nil { failure.code = .connectionLost }
            failure.message = "cannot connect to \(settings): \(failure.message)"
            throw failure
        }
        try? await connection.close()
    }
}

private enum LeaseOutcome: Sendable {
    case leased(PostgresConnection)
    case failed
    case timedOut
}
