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

extension ServiceRuntime {
    /// Runs the pool and the holders of kept connections until cancelled or the pool stops.
    func run() async {
        keeper.start()
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.runHolders() }
                // In this task, at once: a call made before the pool runs waits for it (and PostgresNIO warns).
                keeper.started.signal()
                await client.run()
                stopKeeping()
                keeper.releaseAllHeld()
            }
        } onCancel: {
            stopKeeping()
        }
    }

    private func runHolders() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.releaseIdleConnections() }
            for await _ in keeper.wakeups.stream {
                for request in keeper.takeRequests() { group.addTask { await self.hold(request) } }
            }
            // Stopped: wakes the idle sweep; holders of connections in use end when their call gives them back.
            group.cancelAll()
        }
    }

    /// A connection leased from the pool and kept for later calls, or `nil` when none can be kept now.
    func keepConnection() async -> KeptConnection? {
        let request = KeepRequest()
        if !keeper.enqueue(request) { return nil }
        return await request.wait()
    }

    /// Ends a call's use of `kept`: back to the idle list, or to the pool when a caller waits there, when it
    /// closed, or when the service is stopping.
    func giveBack(_ kept: KeptConnection) {
        let release = leases.withLock { book in
            book.inUse -= 1
            if kept.connection.isClosed || book.waiting > 0 || !keeper.isAccepting { return true }
            book.kept.append(IdleConnection(kept: kept, since: .now))
            return false
        }
        if release { kept.released.signal() }
    }

    /// Leases a connection for `request` and holds it until released.
    private func hold(_ request: KeepRequest) async {
        do {
            try await client.withConnection { connection in
                try noteLeased(connection)
                let kept = KeptConnection(connection: connection)
                keeper.noteHeld(kept)
                defer { keeper.noteLetGo(kept) }
                guard request.answer(kept) else { return }
                await kept.released.wait()
            }
        } catch {
            // Not kept: the caller leases from the pool itself, which reports what is wrong.
        }
        request.answer(nil)
    }

    /// Every ``ConnectionKeeper/idleLimit``, sends the connections idle at least that long back to the pool.
    private func releaseIdleConnections() async {
        while keeper.isAccepting {
            try? await Task.sleep(for: keeper.idleLimit)
            let (now, limit) = (ContinuousClock.now, keeper.idleLimit)
            let expired = leases.withLock { book in
                let count = book.kept.prefix { now - $0.since >= limit }.count
                defer { book.kept.removeFirst(count) }
                return book.kept.prefix(count)
            }
            for idle in expired { idle.kept.released.signal() }
        }
    }

    private func stopKeeping() {
        for request in keeper.stop() { request.answer(nil) }
        let idle = leases.withLock { book in
            defer { book.kept = [] }
            return book.kept
        }
        for connection in idle { connection.kept.released.signal() }
    }
}
