import _ConnectionPoolModule
import CoreMetrics
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Synchronization
import StructPostgresCore

/// The connections layer of one host: PostgresNIO's connection pool, which opens, keeps alive, replaces and closes
/// connections, and the library's ``LeaseStateMachine`` over it, which keeps connections leased from it and hands
/// them from call to call (``withConnection(_:)``). This type only runs the machine's actions: it resumes waiting
/// calls, leases from and gives back to PostgresNIO's pool, and arms the one timer.
package final class ConnectionPool: Sendable {
    typealias Upstream = _ConnectionPoolModule.ConnectionPool<
        PostgresConnection, PostgresConnection.ID, ConnectionIDGenerator, UpstreamRequest, Int, KeepAlive,
        NoOpConnectionPoolMetrics<PostgresConnection.ID>, ContinuousClock
    >
    typealias Machine = LeaseStateMachine<PostgresConnection, StructPostgresError>

    package let settings: ConnectionSettings
    let options: PoolOptions
    package let logger: Logger
    package let canceller: StatementCanceller
    let telemetry: Telemetry
    /// One of several hosts or a replica: a host that cannot be reached fails the call at once (and the router
    /// goes elsewhere) instead of after ``PoolOptions/acquireTimeout``.
    let failsFast: Bool
    /// Signalled when ``run()`` starts (it may have stopped since).
    let started = ReleaseSignal()
    private let state: Guarded<Locked>
    private let ids = Atomic(0)
    private let upstreamBox = Guarded<Upstream?>(nil)

    private struct Locked {
        var machine: Machine
        /// The calls waiting, by the id the machine knows them by.
        var waiting: [Int: CheckedContinuation<PostgresConnection, any Error>] = [:]
        /// Calls cancelled before they started waiting.
        var cancelledEarly: Set<Int> = []
        var timer: Scheduled<Void>?
        var running = false
        /// Leases asked of PostgresNIO's pool and not yet answered, oldest first.
        var outstanding: [Int] = []
        /// Leases withdrawn and asked again (see ``nudge()``): their answers are not the machine's.
        var withdrawn: Set<Int> = []
        /// The last failure to connect because the host did not answer, while no connection has opened since.
        var silent: StructPostgresError?
    }

    init(
        settings: ConnectionSettings, options: PoolOptions, logger: Logger, telemetry: Telemetry, background: BackgroundTasks,
        failsFast: Bool = false
    ) throws {
        self.telemetry = telemetry
        self.failsFast = failsFast
        self.settings = settings
        self.options = options
        self.logger = logger
        _ = try settings.connectionConfiguration()
        if let timeout = options.callTimeout, timeout <= .zero {
            throw StructPostgresError(.invalidConfiguration, "PoolOptions.callTimeout \(timeout) is not positive; nil sets no timeout")
        }
        canceller = StatementCanceller(
            settings: settings, connectTimeout: settings.connectTimeout ?? options.connectTimeout, logger: logger, background: background)
        state = Guarded(
            Locked(
                machine: Machine(
                    .init(
                        maximum: options.maxConnections, keepIdleFor: options.keepIdleConnectionsFor,
                        acquireTimeout: options.acquireTimeout, failsFast: failsFast))))
        var configuration = ConnectionPoolConfiguration()
        configuration.minimumConnectionCount = options.minConnections
        configuration.maximumConnectionSoftLimit = options.maxConnections
        configuration.maximumConnectionHardLimit = options.maxConnections
        configuration.idleTimeout = options.idleTimeout
        // A lease asked while as many connections as this are being opened is queued and may wait for the next
        // lease to be asked before one is opened for it: never fewer than the machine may ask for.
        configuration.maximumConcurrentConnectionRequests = max(options.maxConnections, configuration.maximumConcurrentConnectionRequests)
        let upstream = Upstream(
            configuration: configuration, idGenerator: ConnectionIDGenerator(), requestType: UpstreamRequest.self,
            keepAliveBehavior: KeepAlive(logger: logger), observabilityDelegate: NoOpConnectionPoolMetrics(connectionIDType: Int.self),
            clock: ContinuousClock()
        ) { [weak self] id, _ in
            guard let self else { throw StructPostgresError(.connectionLost, "the pool has stopped") }
            return ConnectionAndMetadata(connection: try await self.open(id: id), maximalStreamsOnConnection: 1)
        }
        upstreamBox.withLock { $0 = upstream }
    }

    private var upstream: Upstream { upstreamBox.withLock { $0! } }

    /// The host and port this pool connects to.
    var endpoint: Endpoint { Endpoint(host: settings.host, port: settings.port) }

    /// How long opening one connection may take.
    package var connectTimeout: Duration { settings.connectTimeout ?? options.connectTimeout }

    /// How many connections calls are using.
    var connectionsInUse: Int { state.withLock { $0.machine.inUse } }

    /// Whether the pool still hands out connections (its service has not stopped).
    package var isRunning: Bool { state.withLock { $0.machine.isRunning } }

    /// How many kept connections wait idle for the next call.
    var idleKeptCount: Int { state.withLock { $0.machine.idleCount } }

    // MARK: Leasing

    /// Leases a connection for `body` and gives it back afterwards. A connection found closed before `body` starts
    /// is dropped and another leased: as many times as the pool holds connections, plus one.
    package func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection(reportingTo: telemetry.metrics, body)
    }

    /// ``withConnection(_:)``, reporting the pool's use to `metrics`, the metrics backend its operation looked up.
    package func withConnection<T>(reportingTo metrics: (any MetricsFactory)?, _ body: (PostgresConnection) async throws -> T) async throws
        -> T
    {
        guard let timeout = options.callTimeout else { return try await leaseAndRun(reportingTo: metrics, body) }
        return try await CallDeadline.within(.now + timeout) { try await leaseAndRun(reportingTo: metrics, body) }
    }

    private func leaseAndRun<T>(reportingTo metrics: (any MetricsFactory)?, _ body: (PostgresConnection) async throws -> T) async throws
        -> T
    {
        for _ in 0...options.maxConnections {
            let connection = try await lease(reportingTo: metrics)
            guard !connection.isClosed else {
                release(connection)
                continue
            }
            defer {
                release(connection)
                reportUsage(to: metrics)
            }
            return try await body(connection)
        }
        throw StructPostgresError(.connectionLost, "every connection the pool handed out had closed (the server restarting?)")
    }

    private func lease(reportingTo metrics: (any MetricsFactory)?) async throws -> PostgresConnection {
        let id = ids.add(1, ordering: .relaxed).newValue
        let now = ContinuousClock.now
        let immediate = state.withLock { locked -> PostgresConnection? in
            guard locked.machine.idleCount > 0, case .connection(let connection) = locked.machine.lease(id, now: now) else { return nil }
            return connection
        }
        if let immediate { return immediate }
        if failsFast { try await checkReachable() }
        let connection: PostgresConnection
        do {
            connection = try await waitForConnection(id, since: now, reportingTo: metrics)
        } catch let error as StructPostgresError where error.code == .poolTimeout && connectionsInUse < options.maxConnections {
            // Not every connection is in use: connecting keeps failing. The host not answering says why (a connection
            // attempt, or a connection given up while this call waited); otherwise one attempt here does, when it fails.
            if let silent = state.withLock({ $0.silent }) { throw silent }
            if let found = canceller.lastFoundSilent, found >= now {
                throw StructPostgresError(
                    .connectionLost,
                    "no connection within \(options.acquireTimeout): the server stopped answering (a connection was given up for it \(ContinuousClock.now - found) ago) and none could be opened since"
                )
            }
            try await diagnoseConnection()
            throw error
        }
        telemetry.recordWait(ContinuousClock.now - now)
        return connection
    }

    private func waitForConnection(
        _ id: Int, since now: ContinuousClock.Instant, reportingTo metrics: (any MetricsFactory)?
    ) async throws -> PostgresConnection {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
                let deadline = CallDeadline.current
                let (answer, effects) = state.withLock { locked -> (Result<PostgresConnection, StructPostgresError>?, Effects) in
                    switch locked.machine.lease(id, now: now, deadline: deadline) {
                    case .connection(let connection): return (.success(connection), Effects())
                    case .failed(let reason, let actions): return (.failure(error(reason, locked)), prepare(actions, &locked))
                    case .wait(let actions):
                        if locked.cancelledEarly.remove(id) != nil {
                            let actions = actions.merged(locked.machine.cancel(id), dropping: id)
                            return (.failure(error(.cancelled, locked)), prepare(actions, &locked))
                        }
                        locked.waiting[id] = continuation
                        return (nil, prepare(actions, &locked))
                    }
                }
                if let answer { continuation.resume(with: answer) }
                perform(effects)
                if answer == nil { reportUsage(to: metrics) }
            }
        } onCancel: {
            act { locked in
                guard locked.waiting[id] != nil else {
                    locked.cancelledEarly.insert(id)
                    return Machine.Actions()
                }
                return locked.machine.cancel(id)
            }
        }
    }

    private func release(_ connection: PostgresConnection) {
        let reusable = !connection.isClosed
        act { $0.machine.release(connection, reusable: reusable, now: .now) }
    }

    /// What the machine decided, turned under the lock into what to do outside it.
    private struct Effects {
        var answers: [(CheckedContinuation<PostgresConnection, any Error>, Result<PostgresConnection, StructPostgresError>)] = []
        var releaseUpstream: [PostgresConnection] = []
        /// The pool has stopped: what is given back is closed here too, since PostgresNIO's pool may have stopped
        /// already and would then never close it (a stream's connection given back after the stop stayed open).
        var closeReleased = false
        var requests: [UpstreamRequest] = []
    }

    /// Feeds the machine one event and carries out its actions: the machine, the waiting calls and the timer under
    /// one lock, the calls answered and PostgresNIO's pool asked outside it.
    private func act(_ event: (inout Locked) -> Machine.Actions) {
        perform(state.withLock { locked in prepare(event(&locked), &locked) })
    }

    private func prepare(_ actions: Machine.Actions, _ locked: inout Locked) -> Effects {
        var effects = Effects(releaseUpstream: actions.releaseUpstream, closeReleased: !locked.machine.isRunning)
        guard !actions.isEmpty else { return effects }
        if let due = actions.armTimer { arm(due, &locked) }
        effects.requests = (0..<actions.requestUpstream).map { _ in UpstreamRequest(id: ids.add(1, ordering: .relaxed).newValue, pool: self)
        }
        locked.outstanding += effects.requests.map(\.id)
        for (connection, id) in actions.hand {
            if let continuation = locked.waiting.removeValue(forKey: id) { effects.answers.append((continuation, .success(connection))) }
        }
        for (id, reason) in actions.fail {
            if let continuation = locked.waiting.removeValue(forKey: id) {
                effects.answers.append((continuation, .failure(error(reason, locked))))
            }
        }
        return effects
    }

    private func perform(_ effects: Effects) {
        for (continuation, answer) in effects.answers { continuation.resume(with: answer) }
        for connection in effects.releaseUpstream {
            upstream.releaseConnection(connection)
            if effects.closeReleased { connection.close().whenComplete { _ in } }
        }
        if !effects.requests.isEmpty { upstream.leaseConnections(effects.requests) }
    }

    private func arm(_ due: ContinuousClock.Instant, _ locked: inout Locked) {
        locked.timer?.cancel()
        let delay = max(.zero, due - .now)
        locked.timer = PostgresClient.defaultEventLoopGroup.any().scheduleTask(in: TimeAmount(delay)) { [weak self] in
            self?.act { $0.machine.timerFired(now: .now) }
        }
    }

    /// The error a waiting call ends with (under the lock: it reads the pool's use).
    private func error(_ reason: Machine.Reason, _ locked: Locked) -> StructPostgresError {
        switch reason {
        case .refused(let error), .unreachable(let error):
            return error
        case .cancelled:
            return StructPostgresError.from(CancellationError(), sql: nil)
        case .pastDeadline:
            return CallDeadline.passedWaiting(
                "the pool holds at most \(options.maxConnections) connections and \(locked.machine.inUse) are in use")
        case .shutDown:
            return StructPostgresError(.connectionLost, "the connection pool has stopped")
        case .timedOut:
            let notRunning =
                locked.running ? "" : " (PostgresService.run() has not been started: the pool hands out connections only while it runs)"
            return StructPostgresError(
                .poolTimeout,
                "no free connection within \(options.acquireTimeout): the pool holds at most \(options.maxConnections) connections and \(locked.machine.inUse) are in use\(notRunning)"
            )
        }
    }

    // MARK: PostgresNIO's pool

    /// PostgresNIO's pool answered lease `id`, asked for by the machine (or withdrawn since: then a connection goes
    /// straight back, and a failure is the withdrawal's).
    func answered(_ id: Int, _ result: Result<ConnectionLease<PostgresConnection>, ConnectionPoolError>) {
        let now = ContinuousClock.now
        act { locked in
            locked.outstanding.removeAll { $0 == id }
            let withdrawn = locked.withdrawn.remove(id) != nil
            switch result {
            case .success(let lease):
                if withdrawn { return Machine.Actions(releaseUpstream: [lease.connection]) }
                return locked.machine.leased(lease.connection, now: now)
            case .failure(let error):
                if withdrawn { return Machine.Actions() }
                let failure = StructPostgresError(.connectionLost, "cannot connect to \(settings): PostgresNIO's pool gave up (\(error))")
                return locked.machine.leaseFailed(failure)
            }
        }
    }

    /// After a connection closed: PostgresNIO's pool opens no connection for leases already queued when one closes
    /// (`PoolStateMachine.connectionClosed` only refills its minimum; canary: `UpstreamPoolCanaryTests`), so a
    /// call waiting for one would wait until another lease is asked. The oldest lease still asked for is withdrawn
    /// and asked again, which opens a connection in the slot the closed one left. Run after the pool has seen the
    /// closing (the closing connection's event loop, after its close callbacks).
    /// Upstream: vapor/postgres-nio#657, fixed by the open PR #667; canary: `UpstreamPoolCanaryTests`.
    private func nudge() {
        let swap = state.withLock { locked -> (old: Int, new: UpstreamRequest)? in
            guard !locked.outstanding.isEmpty else { return nil }
            let old = locked.outstanding.removeFirst()
            locked.withdrawn.insert(old)
            let new = UpstreamRequest(id: ids.add(1, ordering: .relaxed).newValue, pool: self)
            locked.outstanding.append(new.id)
            return (old, new)
        }
        guard let swap else { return }
        upstream.cancelLeaseConnection(swap.old)
        upstream.leaseConnection(swap.new)
    }

    /// Opens a connection for PostgresNIO's pool, places the commit watcher on it before any statement, and tells the
    /// machine how that went: a server that refuses the client for good (class 28, 3D000, a server setting it refuses)
    /// fails waiting calls at once.
    ///
    /// A host that does not answer (a silent cut, a host down, an address moved) is tried again at once, in the same
    /// attempt of PostgresNIO's pool, until it answers or the pool stops: the pool's backoff, which grows with each
    /// failure up to a minute, and its circuit breaker, which then fails every lease at once until its next attempt,
    /// would delay the first connection after the host comes back by as much. ``SocketConnector`` sends a new SYN
    /// every second meanwhile; waiting calls still end at their acquire timeout.
    private func open(id: PostgresConnection.ID) async throws -> PostgresConnection {
        while true {
            let started = ContinuousClock.now
            do {
                return try await openOnce(id: id)
            } catch {
                let failure = StructPostgresError.from(error, sql: nil)
                guard SocketConnector.meansNoAnswer(failure), isRunning, !Task.isCancelled else { throw error }
                logger.debug("the host does not answer; trying again", metadata: ["host": "\(endpoint)", "error": "\(failure.message)"])
                if ContinuousClock.now - started < .seconds(1) { try await Task.sleep(for: .seconds(1)) }
            }
        }
    }

    private func openOnce(id: PostgresConnection.ID) async throws -> PostgresConnection {
        do {
            let connection = try await settings.connect(timeout: connectTimeout, id: id, logger: logger)
            try await connection.eventLoop.submit { [logger] in _ = ReadyForQueryWatcher.of(connection, logger: logger) }.get()
            state.withLock { locked in
                locked.machine.connected()
                locked.silent = nil
            }
            let loop = connection.eventLoop
            connection.closeFuture.whenComplete { [weak self, weak connection] _ in
                guard let self else { return }
                self.state.withLock { $0.machine.closed(connection) }
                loop.execute { self.nudge() }
            }
            return connection
        } catch {
            let failure = StructPostgresError.from(error, sql: nil)
            // PostgresNIO's pool retries these like any failure, until its circuit breaker trips (60 s):
            // vapor/postgres-nio#602; canary: `aQueryOnAPoolWhoseDatabaseDoesNotExistWaits`. A server setting the
            // server does not know (42704) or whose value it refuses (22023) is refused at every attempt too.
            let refused = failure.sqlState.map { $0.hasPrefix("28") || ["3D000", "42704", "22023"].contains($0) } ?? false
            act { locked in
                locked.silent = SocketConnector.meansNoAnswer(failure) ? failure : nil
                return locked.machine.connectFailed(failure, refusedForGood: refused)
            }
            throw error
        }
    }

    // MARK: Running

    /// Runs PostgresNIO's pool until cancelled or a graceful shutdown; then fails waiting calls and gives every kept
    /// connection back.
    func run() async {
        state.withLock { $0.running = true }
        started.signal()
        await withTaskCancellationHandler {
            await cancelWhenGracefulShutdown { await self.upstream.run() }
        } onCancel: {
            act { locked in
                locked.running = false
                locked.timer?.cancel()
                return locked.machine.shutDown()
            }
        }
        act { $0.machine.shutDown() }
    }

    /// For a pool that ``failsFast``: throws when no connection is open and the host refuses a new one.
    func checkReachable() async throws {
        guard failsFast, state.withLock({ $0.machine.open == 0 }) else { return }
        try await diagnoseConnection()
    }

    /// Reports the pool's use to `metrics`, the metrics backend, when there is one.
    func reportUsage(to metrics: (any MetricsFactory)?) {
        guard let metrics else { return }
        let (inUse, idle, waiting) = state.withLock { ($0.machine.inUse, $0.machine.idleCount, $0.machine.waiting) }
        telemetry.recordPool(inUse: inUse, idle: idle, waiting: waiting, max: options.maxConnections, metrics)
    }
}
