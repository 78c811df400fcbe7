import Synchronization

/// Fires once, when the app starts shutting down; work run through ``cancelWhenTriggered(_:)`` is cancelled then.
final class ShutdownSignal: Sendable {
    private struct State {
        var triggered = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Fires the signal: every waiter returns, and every later one at once.
    func trigger() {
        let waiters = state.withLock { state in
            state.triggered = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `body` until it returns, or until the signal fires (`nil`, `body` cancelled).
    func cancelWhenTriggered<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                await self.wait()
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Returns when the signal fires or the task is cancelled.
    func wait() async {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.triggered || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
