import PostgresNIO
import Synchronization

/// Keeps pooled connections leased from `PostgresClient` between the library's calls, so that a call takes one
/// from a short list under a lock instead of a lease from the pool and back. Leasing from PostgresNIO's pool and
/// returning to it costs more client CPU than sending a single-row statement (it schedules and cancels the pool's
/// keep-alive and idle timers every time): with eight tasks upserting one row per call, hand-written code that
/// leases per call uses about 60 % more client CPU per upsert than the same code on a connection it keeps.
///
/// Each kept connection is held by a task of ``PostgresService/run()`` inside `PostgresClient.withConnection`.
/// A kept connection goes back to the pool when a caller is waiting for one there, when it has been idle for
/// ``PoolOptions/keepIdleConnectionsFor``, when it closed, and when the service stops; so the pool's own limits, keep-alive and idle
/// timeout govern every connection the library is not actively reusing.
final class ConnectionKeeper: Sendable {
    /// How long a kept connection may stay idle before it goes back to the pool; zero keeps none.
    let idleLimit: Duration

    init(idleLimit: Duration) { self.idleLimit = idleLimit }

    private let accepting = Atomic(false)
    private let pending = Mutex<[KeepRequest]>([])
    /// The release signals of connections holders keep, idle or in use.
    private let held = Mutex<[ObjectIdentifier: ReleaseSignal]>([:])
    let wakeups = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    /// Whether holders can be started: ``PostgresService/run()`` is running.
    var isAccepting: Bool { accepting.load(ordering: .acquiring) }

    /// Signalled when ``PostgresService/run()`` starts the pool (it may have stopped since).
    let started = ReleaseSignal()

    func start() { accepting.store(idleLimit > .zero, ordering: .releasing) }

    /// Queues `request` for a holder; `false` when the service is not running.
    func enqueue(_ request: KeepRequest) -> Bool {
        let queued = pending.withLock { queue in
            guard isAccepting else { return false }
            queue.append(request)
            return true
        }
        if queued { wakeups.continuation.yield(()) }
        return queued
    }

    /// The requests queued since the last call.
    func takeRequests() -> [KeepRequest] {
        pending.withLock { queue in
            defer { queue = [] }
            return queue
        }
    }

    /// Stops accepting requests; returns those still queued.
    func stop() -> [KeepRequest] {
        let left = pending.withLock { queue in
            accepting.store(false, ordering: .releasing)
            defer { queue = [] }
            return queue
        }
        wakeups.continuation.finish()
        return left
    }

    func noteHeld(_ kept: KeptConnection) { held.withLock { $0[ObjectIdentifier(kept.released)] = kept.released } }
    func noteLetGo(_ kept: KeptConnection) { _ = held.withLock { $0.removeValue(forKey: ObjectIdentifier(kept.released)) } }

    /// Ends every holder, also of connections a call is still using: once the pool has stopped they are closed,
    /// and ``PostgresService/run()`` must not wait for a call that never ends.
    func releaseAllHeld() {
        let signals = held.withLock { held in
            defer { held = [:] }
            return Array(held.values)
        }
        for signal in signals { signal.signal() }
    }
}

/// A caller's request for a kept connection, answered once: by the holder that leased it (or could not), when
/// the service stops, or with `nil` when the caller is cancelled while waiting.
final class KeepRequest: Sendable {
    private enum State {
        case pending
        case waiting(CheckedContinuation<KeptConnection?, Never>)
        case answered(KeptConnection?)
        case done
    }
    private let state = Mutex<State>(.pending)

    /// The kept connection, or `nil` when none could be kept or the caller was cancelled.
    func wait() async -> KeptConnection? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> KeptConnection?? in
                    if case .answered(let kept) = state {
                        state = .done
                        return .some(kept)
                    }
                    state = .waiting(continuation)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            answer(nil)
        }
    }

    /// Answers the request; `false` when it was already answered (the caller stopped waiting), in which case the
    /// holder must give `kept` back itself.
    @discardableResult
    func answer(_ kept: KeptConnection?) -> Bool {
        let (accepted, waiting) = state.withLock { state -> (Bool, CheckedContinuation<KeptConnection?, Never>?) in
            switch state {
            case .pending:
                state = .answered(kept)
                return (true, nil)
            case .waiting(let continuation):
                state = .done
                return (true, continuation)
            case .answered, .done:
                return (false, nil)
            }
        }
        waiting?.resume(returning: kept)
        return accepted
    }
}

/// A connection kept leased by a holder task until ``released`` is signalled.
struct KeptConnection: Sendable {
    let connection: PostgresConnection
    let released = ReleaseSignal()
}

/// A kept connection no call is using, and since when.
struct IdleConnection: Sendable {
    let kept: KeptConnection
    let since: ContinuousClock.Instant
}
