import PostgresNIO
import Synchronization

extension ServiceRuntime {
    /// Leases a pooled connection for `body`, waiting at most ``PoolOptions/acquireTimeout`` for one.
    ///
    /// `PostgresClient` waits for a free connection without bound. The lease is taken in a child task
    /// and handed over, so the wait can be raced against a timer and cancelled, while `body` runs in the
    /// caller's task and need not be `Sendable`. The child holds the lease until `body` has returned,
    /// even if the caller is cancelled meanwhile, so a connection is never shared while in use.
    func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        // The pool may still hand out a connection the server has just closed, before it notices: lease again,
        // giving the pool a moment to drop it.
        for attempt in 0..<20 {
            do {
                return try await leaseOnce(body)
            } catch is StaleConnection {
                try await Task.sleep(for: .milliseconds(min(5 * (attempt + 1), 50)))
            }
        }
        throw StructPostgresError(.connectionLost, "the pool kept handing out closed connections")
    }

    private struct StaleConnection: Error {}

    private func leaseOnce<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let handoff = AsyncStream<PostgresConnection>.makeStream()
        let release = ReleaseSignal()
        let timeout = configuration.pool.acquireTimeout
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [client] in
                do {
                    try await client.withConnection { connection in
                        self.leaseStarted()
                        defer { self.leaseEnded() }
                        handoff.continuation.yield(connection)
                        handoff.continuation.finish()
                        await release.wait()
                    }
                } catch {
                    handoff.continuation.finish()
                    throw error
                }
            }
            defer {
                release.signal()
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
            switch outcome {
            case .leased(let connection):
                guard !connection.isClosed else { throw StaleConnection() }
                return try await body(connection)
            case .failed:
                // The lease threw (pool closed or not running), or this task was cancelled.
                release.signal()
                do { try await group.next() } catch { throw StructPostgresError.from(error, sql: nil) }
                if Task.isCancelled { throw StructPostgresError.from(CancellationError(), sql: nil) }
                throw StructPostgresError(.connectionLost, "the connection pool is not running")
            case .timedOut:
                group.cancelAll()
                let size = configuration.pool.maxConnections
                if connectionsInUse < size { try await diagnoseConnection() }
                throw StructPostgresError(
                    .poolTimeout,
                    "no free connection within \(timeout): the pool holds at most \(size) connections and \(connectionsInUse) are in use")
            }
        }
    }

    /// Opens one connection outside the pool, so that a pool that keeps failing to connect reports why
    /// (refused, unknown host, wrong password) instead of a bare timeout.
    func diagnoseConnection() async throws {
        let settings = configuration.connection
        let connection = try await settings.connect(
            timeout: settings.connectTimeout ?? configuration.pool.connectTimeout, logger: logger)
        try? await connection.close()
    }
}

private enum LeaseOutcome: Sendable {
    case leased(PostgresConnection)
    case failed
    case timedOut
}

/// A one-shot signal whose wait ignores cancellation: the lease ends only when the borrower is done.
final class ReleaseSignal: Sendable {
    private enum State {
        case pending
        case waiting(CheckedContinuation<Void, Never>)
        case signalled
    }
    private let state = Mutex<State>(.pending)

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if case .signalled = state { return true }
                state = .waiting(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func signal() {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .signalled }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiting?.resume()
    }
}
