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
    /// A caller waiting for a holder to lease a connection; `nil` when none could be kept.
    typealias Request = CheckedContinuation<KeptConnection?, Never>

    /// How long a kept connection may stay idle before it goes back to the pool; zero keeps none.
    let idleLimit: Duration

    init(idleLimit: Duration) { self.idleLimit = idleLimit }

    private let accepting = Atomic(false)
    private let pending = Mutex<[Request]>([])
    let wakeups = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    /// Whether holders can be started: ``PostgresService/run()`` is running.
    var isAccepting: Bool { accepting.load(ordering: .acquiring) }

    func start() { accepting.store(idleLimit > .zero, ordering: .releasing) }

    /// Queues `request` for a holder; `false` when the service is not running.
    func enqueue(_ request: Request) -> Bool {
        let queued = pending.withLock { queue in
            guard isAccepting else { return false }
            queue.append(request)
            return true
        }
        if queued { wakeups.continuation.yield(()) }
        return queued
    }

    /// The requests queued since the last call.
    func takeRequests() -> [Request] {
        pending.withLock { queue in
            defer { queue = [] }
            return queue
        }
    }

    /// Stops accepting requests; returns those still queued.
    func stop() -> [Request] {
        let left = pending.withLock { queue in
            accepting.store(false, ordering: .releasing)
            defer { queue = [] }
            return queue
        }
        wakeups.continuation.finish()
        return left
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
                await client.run()
                stopKeeping()
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
        await withCheckedContinuation { request in
            if !keeper.enqueue(request) { request.resume(returning: nil) }
        }
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

    private func hold(_ request: ConnectionKeeper.Request) async {
        var delivered = false
        do {
            try await client.withConnection { connection in
                try noteLeased(connection)
                let kept = KeptConnection(connection: connection)
                delivered = true
                request.resume(returning: kept)
                await kept.released.wait()
            }
        } catch {
            // Not kept: the caller leases from the pool itself, which reports what is wrong.
        }
        if !delivered { request.resume(returning: nil) }
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
        for request in keeper.stop() { request.resume(returning: nil) }
        let idle = leases.withLock { book in
            defer { book.kept = [] }
            return book.kept
        }
        for connection in idle { connection.kept.released.signal() }
    }
}
