import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// Tells an observer that something it reads changed, coalescing: however many notifications arrive while it
/// fetches, one wait returns afterwards. A failure, or the end (the service stopped), is kept until the observer waits.
final class ChangeSignal: Sendable {
    private struct State {
        var pending = false
        var failure: StructPostgresError?
        var finished = false
        var waiter: CheckedContinuation<Bool, any Error>?
    }

    private let state = Guarded(State())

    func notify() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: true)
    }

    /// Nothing more will change: the wait returns `false`.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: false)
    }

    func fail(_ error: StructPostgresError) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
            state.failure = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: error)
    }

    /// Forgets changes announced so far: a fetch about to start includes them (a transaction's notifications come
    /// together, one per statement and operation).
    func clear() { state.withLock { $0.pending = false } }

    /// Returns `true` once something changed since the last wait returned, `false` when nothing more will; throws the
    /// failure, or `CancellationError` when the task is cancelled.
    func wait() async throws -> Bool {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                enum Now { case ready, finished, failed(StructPostgresError), later }
                let now = state.withLock { state -> Now in
                    if let failure = state.failure { return .failed(failure) }
                    if state.finished { return .finished }
                    if state.pending {
                        state.pending = false
                        return .ready
                    }
                    if Task.isCancelled { return .failed(StructPostgresError.from(CancellationError(), sql: nil)) }
                    state.waiter = continuation
                    return .later
                }
                switch now {
                case .ready: continuation.resume(returning: true)
                case .finished: continuation.resume(returning: false)
                case .failed(let error): continuation.resume(throwing: error)
                case .later: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
