import Synchronization
import StructPostgresCore

/// A one-shot signal whose waits ignore cancellation: the lease ends only when the borrower is done.
package final class ReleaseSignal: Sendable {
    private enum State {
        case pending([CheckedContinuation<Void, Never>])
        case signalled
    }
    private let state = Guarded<State>(.pending([]))

    package init() {}

    package var isSignalled: Bool {
        state.withLock { if case .signalled = $0 { true } else { false } }
    }

    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                guard case .pending(var waiting) = state else { return true }
                waiting.append(continuation)
                state = .pending(waiting)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    package func signal() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state = .signalled }
            if case .pending(let waiting) = state { return waiting }
            return []
        }
        for continuation in waiting { continuation.resume() }
    }
}
