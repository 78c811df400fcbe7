import CoreMetrics
import PostgresNIO
import Synchronization

extension ConnectionPool {
    /// Leases a pooled connection for `body`, waiting at most ``PoolOptions/acquireTimeout`` for one.
    ///
    /// A connection kept from an earlier call (see ``ConnectionKeeper``) is taken first: that is the common
    /// case, and costs a lock. When none is kept but a connection known to be open is idle in the pool, a holder
    /// task leases it and keeps it, within the connect timeout. Otherwise (pool exhausted, no connection opened
    /// yet, connections lost, the idle connection taken or closed at that very moment, the service not running)
    /// the lease is taken in a child task and raced against the timeout, because `PostgresClient` waits without
    /// bound, for instance while the server refuses connections: no lease waits longer than the acquire timeout.
    func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection(reportingTo: telemetry.metrics, body)
    }

    /// ``withConnection(_:)``, reporting the pool's use to `metrics`, the metrics backend its operation looked up.
    func withConnection<T>(reportingTo metrics: (any MetricsFactory)?, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        // The pool may still hand out a connection the server has just closed, before it notices: lease again,
        // giving the pool a moment to drop it.
        for attempt in 0..<20 {
            do {
                // Taken from the kept ones or counted as in use or waiting under one lock: a call giving back a
                // kept connection sees a caller that is about to wait in the pool, and returns it there. Kept
                // connections that have closed (the server restarted) are dropped on the way.
                var closed: [KeptConnection] = []
                let claim = leases.withLock { book -> Claim in
                    while let idle = book.kept.popLast() {
                        if idle.kept.connection.isClosed {
                            closed.append(idle.kept)
                            continue
                        }
                        book.inUse += 1
                        return .kept(idle.kept)
                    }
                    guard book.hasIdleConnection else {
                        book.waiting += 1
                        return .wait
                    }
                    book.inUse += 1
                    return .idle
                }
                for kept in closed { kept.released.signal() }
                reportUsage(to: metrics)
                defer { reportUsage(to: metrics) }
                switch claim {
                case .kept(let kept):
                    return try await useKept(kept, body)
                case .idle:
                    if keeper.isAccepting, let kept = await keepConnection(within: connectTimeout) {
                        return try await useKept(kept, body)
                    }
                    leases.withLock { book in
                        book.inUse -= 1
                        book.waiting += 1
                    }
                    return try await leaseTimed(body)
                case .wait:
                    return try await leaseTimed(body)
                }
            } catch is StaleConnection {
                try await Task.sleep(for: .milliseconds(min(5 * (attempt + 1), 50)))
            }
        }
        throw StructPostgresError(.connectionLost, "the pool kept handing out closed connections")
    }

    private struct StaleConnection: Error {}

    private enum Claim {
        case kept(KeptConnection)
        case idle
        case wait
    }

    /// Runs `body` on a kept connection, counted in use by the claim, and gives it back.
    private func useKept<T>(_ kept: KeptConnection, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        defer { giveBack(kept) }
        guard !kept.connection.isClosed else { throw StaleConnection() }
        return try await body(kept.connection)
    }

    /// Records `connection` as open (until it closes); throws when it has already closed.
    func noteLeased(_ connection: PostgresConnection) throws {
        guard !connection.isClosed else { throw StaleConnection() }
        let id = connection.id
        let isNew = leases.withLock { book in
            book.everOpened = true
            return book.open.insert(id).inserted
        }
        if isNew {
            connection.closeFuture.whenComplete { [self] _ in
                let someoneWaits = leases.withLock { book in
                    book.open.remove(id)
                    return book.waiting > 0
                }
                if someoneWaits { nudgePool() }
            }
        }
    }

    /// PostgresNIO's pool replaces a closed connection only to keep its minimum count: callers already waiting
    /// for a connection would wait until another request arrives. A request of its own makes the pool open a
    /// connection, which goes to the first caller waiting. The pool may learn of the close after this callback, and
    /// a request made before then is only queued: so the request is given up after a second and made again while
    /// callers still wait, until the acquire timeout.
    private func nudgePool() {
        let deadline = ContinuousClock.now + options.acquireTimeout
        Task { [self] in
            while ContinuousClock.now < deadline, leases.withLock({ $0.waiting > 0 }) {
                let served = await withTaskGroup(of: Bool.self) { group in
                    group.addTask { [client] in (try? await client.withConnection { _ in }) != nil }
                    group.addTask {
                        try? await Task.sleep(for: .seconds(1))
                        return false
                    }
                    defer { group.cancelAll() }
                    return await group.next() ?? false
                }
                if served { return }
            }
        }
    }

    /// Leases through a child task raced against the timeout; `waiting` was already counted by the claim.
    private func leaseTimed<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        var waiting = true
        func stopWaiting() {
            if waiting { leases.withLock { $0.waiting -= 1 } }
            waiting = false
        }
        defer { stopWaiting() }
        try await checkReachable()
        let askedAt = ContinuousClock.now
        let handoff = AsyncStream<PostgresConnection>.makeStream()
        let release = ReleaseSignal()
        let timeout = options.acquireTimeout
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                do {
                    try await client.withConnection { connection in
                        leases.withLock { $0.inUse += 1 }
                        defer { leases.withLock { $0.inUse -= 1 } }
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
                    // Cancelled (the caller was, or the lease came first): not a timeout.
                    try? await Task.sleep(for: timeout)
                    return Task.isCancelled ? .failed : .timedOut
                }
                // A pool that fails fast has just asked the server in `checkReachable()`.
                let asksServer = !failsFast && leases.withLock { book in
                    guard !book.everOpened, !book.askingServer else { return false }
                    book.askingServer = true
                    return true
                }
                if asksServer {
                    race.addTask { [self] in
                        // A pool that can connect has usually done so by then: no connection of its own is opened.
                        try? await Task.sleep(for: Self.refusalGrace)
                        let refused = leases.withLock({ $0.everOpened }) || Task.isCancelled ? nil : await refusal()
                        leases.withLock { $0.askingServer = false }
                        if let refused { return .refused(refused) }
                        try? await Task.sleep(for: timeout + .seconds(1))
                        return .failed
                    }
                }
                defer { race.cancelAll() }
                return try await race.next() ?? .failed
            }
            stopWaiting()
            telemetry.recordWait(ContinuousClock.now - askedAt)
            switch outcome {
            case .leased(let connection):
                try noteLeased(connection)
                return try await body(connection)
            case .failed:
                // The lease threw (pool closed or not running), or this task was cancelled.
                release.signal()
                var leaseError: (any Error)?
                do { try await group.next() } catch { leaseError = error }
                // Cancelled while waiting: PostgresNIO's pool reports that in errors of its own.
                if Task.isCancelled { throw StructPostgresError.from(CancellationError(), sql: nil) }
                if let leaseError { throw StructPostgresError.from(leaseError, sql: nil) }
                throw StructPostgresError(.connectionLost, "the connection pool is not running")
            case .refused(let error):
                group.cancelAll()
                throw error
            case .timedOut:
                group.cancelAll()
                let size = options.maxConnections
                if connectionsInUse < size { try await diagnoseConnection() }
                let notRunning = keeper.started.isSignalled ? "" : " (PostgresService.run() has not been started: the pool hands out connections only while it runs)"
                throw StructPostgresError(
                    .poolTimeout,
                    "no free connection within \(timeout): the pool holds at most \(size) connections and \(connectionsInUse) are in use\(notRunning)")
            }
        }
    }

    /// How long a call waiting for a pool's first connection lets the pool try before asking the server itself.
    static var refusalGrace: Duration { .milliseconds(300) }

    /// Opens one connection outside the pool, so that a pool that keeps failing to connect reports why
    /// (refused, unknown host, wrong password) instead of a bare timeout.
    func diagnoseConnection() async throws {
        let connection = try await settings.connect(timeout: connectTimeout, logger: logger)
        try? await connection.close()
    }

    /// The error of a server that turns this client away for good (authentication failed, no such role or
    /// database), from one connection opened outside the pool; `nil` when it lets the client in, or fails in a way
    /// that waiting may mend (refused while it restarts, unreachable for now).
    func refusal() async -> StructPostgresError? {
        do {
            try await diagnoseConnection()
            return nil
        } catch {
            let mapped = StructPostgresError.from(error, sql: nil)
            guard let state = mapped.sqlState, state.hasPrefix("28") || state == "3D000" else { return nil }
            return mapped
        }
    }
}

private enum LeaseOutcome: Sendable {
    case leased(PostgresConnection)
    case failed
    case timedOut
    case refused(StructPostgresError)
}
