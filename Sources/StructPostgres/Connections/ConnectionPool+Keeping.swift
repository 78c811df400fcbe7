import PostgresNIO

extension ConnectionPool {
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

    /// A connection leased from the pool and kept for later calls, or `nil` when none can be kept within
    /// `timeout` (the idle connection counted on was taken or has closed, and the server may be down).
    func keepConnection(within timeout: Duration) async -> KeptConnection? {
        let request = KeepRequest()
        if !keeper.enqueue(request) { return nil }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(timeout)) { request.answer(nil) }
        defer { timer.cancel() }
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
