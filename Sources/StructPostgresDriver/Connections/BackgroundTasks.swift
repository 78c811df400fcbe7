import Synchronization
import StructPostgresCore

/// The work a service does in the background (listening for changes, observation loops, coalesced batches, cancel
/// requests, a stream's held connection), run as child tasks of ``PostgresService/run()``'s task group, as
/// PostgresNIO's `PostgresClient.run()` runs its connections: when `run()` returns, none of it is left running.
///
/// Work started before `run()` starts waits for it; work started after `run()` ended is refused (``start(_:)``
/// returns `nil`), and its caller answers with a named error.
package final class BackgroundTasks: Sendable {
    package typealias Job = @Sendable () async -> Void

    private let jobs: AsyncStream<Job>
    private let intake: AsyncStream<Job>.Continuation

    package init() {
        (jobs, intake) = AsyncStream<Job>.makeStream()
    }

    /// Starts `job` as a child of `run()`'s group; `false` once the service stopped.
    package func start(_ job: @escaping Job) -> Bool {
        if case .enqueued = intake.yield(job) { return true }
        return false
    }

    /// Starts `job` as ``start(_:)`` does, with a handle that cancels that job alone; `nil` once the service stopped.
    package func startCancellable(_ job: @escaping Job) -> Handle? {
        let handle = Handle()
        let started = start {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await job() }
                group.addTask { await handle.waitUntilCancelled() }
                await group.next()
                group.cancelAll()
            }
        }
        return started ? handle : nil
    }

    /// Runs the jobs as they are started, until ``finish()``; then cancels those still running and returns once
    /// they have ended.
    package func run() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs { group.addTask { await job() } }
            group.cancelAll()
        }
    }

    /// The error of work refused because the service stopped: `what` says what was not done.
    package static func stopped(_ what: String) -> StructPostgresError {
        StructPostgresError(.connectionLost, "the service has stopped (its run() returned): \(what)")
    }

    /// Refuses new jobs; ``run()`` cancels the running ones and returns.
    package func finish() { intake.finish() }

    /// Cancels one job: the job's task is cancelled, as a child task of a group is.
    package final class Handle: Sendable {
        private enum State {
            case running
            case waiting(CheckedContinuation<Void, Never>)
            case cancelled
        }

        private let state = Guarded(State.running)

        package func cancel() {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state = .cancelled }
                if case .waiting(let continuation) = state { return continuation }
                return nil
            }
            waiting?.resume()
        }

        /// Returns when ``cancel()`` is called or the task is cancelled (the job ended).
        fileprivate func waitUntilCancelled() async {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        if case .cancelled = state { return true }
                        if Task.isCancelled { return true }
                        state = .waiting(continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                cancel()
            }
        }
    }
}
