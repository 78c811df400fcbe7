import StructPostgresCore

/// The library's part of leasing connections, as a value that takes events and returns what to do: no I/O, no
/// clock of its own, no lock (its owner, ``ConnectionPool``, holds one around it), so that unit tests drive it
/// without a server.
///
/// PostgresNIO's pool opens, keeps alive, replaces and closes connections. This machine keeps up to `maximum` of
/// them leased from it (*kept*) and hands them from one call to the next: a call takes the kept connection used
/// most recently, or waits in line for the next one given back, or for one more leased from PostgresNIO while
/// fewer than `maximum` are kept. A kept connection nobody used for `keepIdleFor` goes back to PostgresNIO's
/// pool. Rules:
/// - every waiting call is answered exactly once: with a connection, or failed (timed out, cancelled, refused,
///   unreachable, shut down);
/// - a waiting call is failed after `acquireTimeout`, or at its own deadline when that comes first (see
///   ``CallDeadline``); one timer serves every deadline (the earliest pending). PostgresNIO's pool has no lease
///   timeout (no upstream issue found; canary: `thePoolsConfigurationHasNoLeaseTimeout`);
/// - a server that refuses the client for good (the owner says so from a connection attempt's error) fails every
///   waiting call at once, and later calls at once, until a connection opens again; a pool that `failsFast`
///   (one of several hosts) does the same for any failure while no connection is open;
/// - a connection given back closed, or one that closes while kept idle, is dropped (never given back to PostgresNIO's
///   pool, which drops it itself), and a caller still waiting is served by another lease from PostgresNIO;
/// - never more than `maximum` connections are kept or asked for at once.
struct LeaseStateMachine<Connection: AnyObject, Failure> {
    typealias Instant = ContinuousClock.Instant

    struct Configuration {
        var maximum: Int
        var keepIdleFor: Duration
        var acquireTimeout: Duration
        var failsFast: Bool
    }

    /// Why a waiting call was failed.
    enum Reason {
        case timedOut
        /// The call's own deadline passed first.
        case pastDeadline
        case cancelled
        /// The server turns this client away for good (authentication, no such database).
        case refused(Failure)
        /// A host that fails fast could not be reached while no connection was open.
        case unreachable(Failure)
        case shutDown
    }

    /// What the owner does after an event, in this order.
    struct Actions {
        /// Calls to answer with a connection.
        var hand: [(Connection, to: Int)] = []
        /// Calls to fail.
        var fail: [(Int, Reason)] = []
        /// How many more connections to lease from PostgresNIO's pool.
        var requestUpstream = 0
        /// Kept connections to give back to PostgresNIO's pool.
        var releaseUpstream: [Connection] = []
        /// When to fire the timer (replacing any armed one).
        var armTimer: Instant?

        var isEmpty: Bool {
            hand.isEmpty && fail.isEmpty && requestUpstream == 0 && releaseUpstream.isEmpty && armTimer == nil
        }
    }

    /// The answer to a lease.
    enum Lease {
        /// A kept connection, at once.
        case connection(Connection)
        /// The call waits; the owner runs the actions.
        case wait(Actions)
        /// The call fails at once; the owner still runs the actions.
        case failed(Reason, Actions)
    }

    fileprivate struct Idle {
        let connection: Connection
        let since: Instant
    }

    fileprivate struct Waiter {
        let id: Int
        let deadline: Instant
    }

    let configuration: Configuration
    /// Kept connections no call is using, the most recently given back last.
    private var idle: [Idle] = []
    /// Kept connections calls are using.
    private(set) var inUse = 0
    /// Calls waiting for a connection, first come first served.
    private var waiters: [Waiter] = []
    /// The deadlines of waiting calls whose own deadline comes before their acquire timeout, by call.
    private var callDeadlines: [Int: Instant] = [:]
    /// Leases asked of PostgresNIO's pool and not yet answered.
    private(set) var requested = 0
    /// Connections PostgresNIO's pool reports open.
    private(set) var open = 0
    private var refusal: Failure?
    private var running = true
    /// When the armed timer fires, if one is armed.
    private var timer: Instant?

    init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    var kept: Int { idle.count + inUse }
    /// Whether the pool still hands out connections (until ``shutDown()``).
    var isRunning: Bool { running }
    var idleCount: Int { idle.count }
    var waiting: Int { waiters.count }

    // MARK: Calls

    /// A call asks for a connection (`id` names it in later events); `deadline`: the call's own, if any.
    mutating func lease(_ id: Int, now: Instant, deadline: Instant? = nil) -> Lease {
        guard running else { return .failed(.shutDown, Actions()) }
        if let refusal {
            // One lease stays asked of PostgresNIO's pool, which keeps trying: the refusal ends when one opens.
            var actions = Actions()
            if requested == 0 && kept < configuration.maximum {
                requested = 1
                actions.requestUpstream = 1
            }
            return .failed(.refused(refusal), actions)
        }
        if let latest = idle.popLast() {
            inUse += 1
            return .connection(latest.connection)
        }
        if let deadline, deadline <= now { return .failed(.pastDeadline, Actions()) }
        waiters.append(Waiter(id: id, deadline: now + configuration.acquireTimeout))
        if let deadline, deadline < now + configuration.acquireTimeout { callDeadlines[id] = deadline }
        var actions = Actions()
        requestMissing(&actions)
        armTimer(&actions)
        return .wait(actions)
    }

    /// A waiting call was cancelled; nothing when it was answered already.
    mutating func cancel(_ id: Int) -> Actions {
        var actions = Actions()
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: index)
            callDeadlines[id] = nil
            actions.fail.append((id, .cancelled))
        }
        return actions
    }

    /// A call gives its connection back; `reusable` is false when it has closed.
    mutating func release(_ connection: Connection, reusable: Bool, now: Instant) -> Actions {
        inUse -= 1
        var actions = Actions()
        if !reusable {
            // Closed: PostgresNIO's pool learns that from the connection itself, and drops it.
            requestMissing(&actions)
        } else {
            keepOrHand(connection, now: now, &actions)
        }
        return actions
    }

    // MARK: PostgresNIO's pool

    /// PostgresNIO's pool answered a lease.
    mutating func leased(_ connection: Connection, now: Instant) -> Actions {
        requested -= 1
        var actions = Actions()
        keepOrHand(connection, now: now, &actions)
        return actions
    }

    /// PostgresNIO's pool failed a lease: it shut down, or gave up connecting (its circuit breaker).
    mutating func leaseFailed(_ failure: Failure) -> Actions {
        requested -= 1
        var actions = Actions()
        failWaiters(running ? .unreachable(failure) : .shutDown, &actions)
        return actions
    }

    /// A connection attempt failed; `refusedForGood` when the server turned the client away (class 28, 3D000).
    mutating func connectFailed(_ failure: Failure, refusedForGood: Bool) -> Actions {
        var actions = Actions()
        if refusedForGood {
            refusal = failure
            failWaiters(.refused(failure), &actions)
        } else if configuration.failsFast && open == 0 {
            failWaiters(.unreachable(failure), &actions)
        }
        return actions
    }

    /// A connection opened.
    mutating func connected() {
        open += 1
        refusal = nil
    }

    /// A connection of PostgresNIO's pool closed; when it was kept idle here, it is dropped (PostgresNIO's pool
    /// learns of the closing from the connection itself).
    mutating func closed(_ connection: Connection?) {
        open = max(0, open - 1)
        if let connection, let index = idle.firstIndex(where: { $0.connection === connection }) {
            idle.remove(at: index)
        }
    }

    // MARK: Time

    /// The timer fired: calls waiting past their deadline are failed, connections idle for `keepIdleFor` go back.
    mutating func timerFired(now: Instant) -> Actions {
        timer = nil
        var actions = Actions()
        while let first = waiters.first, first.deadline <= now {
            waiters.removeFirst()
            actions.fail.append((first.id, callDeadlines.removeValue(forKey: first.id) == nil ? .timedOut : .pastDeadline))
        }
        let past = callDeadlines.filter { $0.value <= now }.keys.sorted()
        if !past.isEmpty {
            waiters.removeAll { past.contains($0.id) }
            for id in past {
                callDeadlines[id] = nil
                actions.fail.append((id, .pastDeadline))
            }
        }
        let expired = idle.prefix { now - $0.since >= configuration.keepIdleFor }.count
        actions.releaseUpstream += idle.prefix(expired).map(\.connection)
        idle.removeFirst(expired)
        armTimer(&actions)
        return actions
    }

    /// The service stops: waiting calls fail, idle kept connections go back; those in use go back when released.
    mutating func shutDown() -> Actions {
        running = false
        var actions = Actions()
        failWaiters(.shutDown, &actions)
        actions.releaseUpstream = idle.map(\.connection)
        idle = []
        return actions
    }

    // MARK: Rules

    /// A connection free for a call: to the first waiting call, else kept idle (or given back at once when the
    /// service stops or no connection is to be kept idle).
    private mutating func keepOrHand(_ connection: Connection, now: Instant, _ actions: inout Actions) {
        if !running {
            actions.releaseUpstream.append(connection)
        } else if !waiters.isEmpty {
            inUse += 1
            let id = waiters.removeFirst().id
            callDeadlines[id] = nil
            actions.hand.append((connection, to: id))
        } else if configuration.keepIdleFor <= .zero {
            actions.releaseUpstream.append(connection)
        } else {
            idle.append(Idle(connection: connection, since: now))
            // No call waits: the timer is armed for an idle connection's moment at the latest. One armed no later
            // than this connection's (an earlier idle one's, or a lone caller's connection coming back call after
            // call) stays.
            if timer.map({ $0 > now + configuration.keepIdleFor }) ?? true { armTimer(&actions) }
        }
    }

    /// Asks PostgresNIO's pool for as many connections as calls wait beyond those already asked for, within the
    /// maximum.
    private mutating func requestMissing(_ actions: inout Actions) {
        let wanted = min(waiters.count - requested, configuration.maximum - kept - requested)
        if wanted > 0 {
            requested += wanted
            actions.requestUpstream += wanted
        }
    }

    private mutating func failWaiters(_ reason: Reason, _ actions: inout Actions) {
        actions.fail += waiters.map { ($0.id, reason) }
        waiters = []
        callDeadlines = [:]
    }

    /// Arms the timer for the earliest moment something is due, unless it is armed for that moment or earlier.
    private mutating func armTimer(_ actions: inout Actions) {
        let idleDue = idle.first.map { $0.since + configuration.keepIdleFor }
        var waiterDue = waiters.first?.deadline
        if !callDeadlines.isEmpty, let early = callDeadlines.values.min() { waiterDue = waiterDue.map { min($0, early) } ?? early }
        let earliest =
            switch (waiterDue, idleDue) {
            case (let waiter?, let idle?): min(waiter, idle)
            case (let waiter, let idle): waiter ?? idle
            }
        guard let due = earliest, timer.map({ due < $0 }) ?? true else { return }
        timer = due
        actions.armTimer = due
    }
}

extension LeaseStateMachine: Sendable where Connection: Sendable, Failure: Sendable {}
extension LeaseStateMachine.Actions: Sendable where Connection: Sendable, Failure: Sendable {}
extension LeaseStateMachine.Reason: Sendable where Failure: Sendable {}
extension LeaseStateMachine.Lease: Sendable where Connection: Sendable, Failure: Sendable {}
extension LeaseStateMachine.Idle: Sendable where Connection: Sendable {}
extension LeaseStateMachine.Waiter: Sendable {}
