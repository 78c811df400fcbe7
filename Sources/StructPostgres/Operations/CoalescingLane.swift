import PostgresNIO
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// Concurrent calls of one kind gathered into one statement: the coalesced single-row upserts of one entity type
/// and conflict rule, its single-row deletes, or the point reads of one shape (see ``WriteCoalescing``).
///
/// A call that finds nothing of its lane being run or waiting, after a batch of one call, runs at once, in its own
/// task: a lone caller waits for nothing and crosses no thread. Otherwise it waits with the others until a batch of
/// the lane ends, as many calls as the last batch held have come (when nothing is being run: the callers of a batch
/// tend to come back together), the window ends or the batch is full; the batch then runs in a task of its own, so
/// that no caller's cancellation reaches another caller's work. A caller cancelled while it waits leaves the batch;
/// one cancelled after its batch was sent gets the batch's outcome.
final class CoalescingLane<Input: Sendable, Output: Sendable>: Sendable {
    /// Runs a batch: one outcome per input, in order.
    typealias Run = @Sendable ([Input]) async -> [Result<Output, any Error>]

    /// A class: the lane's arrays of waiters then copy references, not values of a generic type through its
    /// value witnesses (the lane's code runs unspecialized for an entity type of the caller's module).
    private final class Waiter: LaneWaiter, @unchecked Sendable {
        let input: Input
        /// How this call runs; a batch runs the way its first call would (its trace, say).
        let run: Run
        let continuation: CheckedContinuation<Output, any Error>

        init(id: UInt64, input: Input, run: @escaping Run, continuation: CheckedContinuation<Output, any Error>) {
            self.input = input
            self.run = run
            self.continuation = continuation
            super.init(id: id)
        }
    }

    /// Not generic: a lone call locks it twice, and a generic type's metadata would be looked up each time.
    private let state = Guarded(LaneState())
    private let window: Duration
    private let maxBatch: Int
    private let background: BackgroundTasks
    /// What a call cancelled while it waits is told: that its work was not sent.
    private let withdrawn: String

    init(window: Duration, maxBatch: Int, background: BackgroundTasks, withdrawn: String) {
        self.window = window
        self.maxBatch = maxBatch
        self.background = background
        self.withdrawn = withdrawn
    }

    /// Calls waiting for a batch, and batches being run (a lone call counts as one).
    var load: (waiting: Int, running: Int) { state.withLock { ($0.waiting.count, $0.running) } }

    /// Runs `body` at once, as a batch of one, when nothing of the lane runs or waits and its last batch held one
    /// call: a lone call, which pays for nothing but this check. `nil`, without running it, when others are in
    /// flight: the call is then ``submit(_:run:)``ted.
    func alone<T>(_ body: () async throws -> T) async throws -> T? {
        let alone = state.withLock { state in
            guard state.waiting.isEmpty, state.running == 0, state.lastBatch == 1 else { return false }
            state.running += 1
            return true
        }
        guard alone else { return nil }
        defer { finishedRunning() }
        return try await body()
    }

    /// Runs `input` with the concurrent calls of the lane; returns its own outcome.
    func submit(_ input: Input, run: @escaping Run) async throws -> Output {
        let id = state.withLock { $0.number() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let next = state.withLock { state in
                    state.waiting.append(Waiter(id: id, input: input, run: run, continuation: continuation))
                    return state.next(maxBatch: maxBatch)
                }
                act(on: next)
                if Task.isCancelled { withdraw(id) }
            }
        } onCancel: {
            withdraw(id)
        }
    }

    private func act(on next: LaneState.Next) {
        switch next {
        case .wait: break
        case .send(let batch): send(batch.map { unsafeDowncast($0, to: Waiter.self) })
        case .startWindow(let started):
            PostgresClient.defaultEventLoopGroup.any().scheduleTask(in: .nanoseconds(window.nanoseconds)) {
                self.windowEnded(started)
            }
        }
    }

    /// The window of the waiting calls ended: they go as they are.
    private func windowEnded(_ window: UInt64) {
        let batch = state.withLock { state -> [LaneWaiter]? in
            guard state.window == window else { return nil }
            state.window = nil
            return state.waiting.isEmpty ? nil : state.takeBatch(max: maxBatch)
        }
        if let batch { send(batch.map { unsafeDowncast($0, to: Waiter.self) }) }
    }

    /// A batch of the lane ended: the calls that gathered meanwhile go on as ``LaneState/next(maxBatch:)`` says.
    private func finishedRunning() {
        act(
            on: state.withLock { state in
                state.running -= 1
                return state.next(maxBatch: maxBatch)
            })
    }

    /// Removes a cancelled caller that still waits, which then throws `queryCancelled`; its work is not sent.
    private func withdraw(_ id: UInt64) {
        let waiter = state.withLock { state -> LaneWaiter? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            defer { if state.waiting.isEmpty { state.window = nil } }
            return state.waiting.remove(at: index)
        }
        guard let waiter else { return }
        unsafeDowncast(waiter, to: Waiter.self).continuation.resume(throwing: StructPostgresError(.queryCancelled, withdrawn))
    }

    /// Runs `batch` in a task of the service's background (see ``BackgroundTasks``); once the service stopped, fails
    /// its calls with the reason.
    private func send(_ batch: [Waiter]) {
        let started = background.start {
            let outcomes = await batch[0].run(batch.map { $0.input })
            self.finishedRunning()
            for index in batch.indices { batch[index].continuation.resume(with: outcomes[index]) }
        }
        guard !started else { return }
        finishedRunning()
        let stopped = BackgroundTasks.stopped("the coalesced call was not sent")
        for waiter in batch { waiter.continuation.resume(throwing: stopped) }
    }
}

/// A call waiting in a lane, as the lane's state keeps it: its number (the lane's subclass holds the rest).
private class LaneWaiter: @unchecked Sendable {
    let id: UInt64
    init(id: UInt64) { self.id = id }
}

/// The waiting calls and running batches of a lane.
private struct LaneState {
    enum Next {
        case wait, send([LaneWaiter]), startWindow(UInt64)
    }

    var waiting: [LaneWaiter] = []
    /// Batches being run.
    var running = 0
    /// The window of the waiting calls, while it runs: the number it was started with.
    var window: UInt64?
    var lastNumber: UInt64 = 0
    /// How many calls the last batch held: as many are expected to come back together.
    var lastBatch = 1

    mutating func number() -> UInt64 {
        lastNumber += 1
        return lastNumber
    }

    /// What the waiting calls do now: go as a batch when it is full, or when nothing is being run and as many
    /// have come as the last batch held (its callers tend to come back together); otherwise wait for a batch to
    /// end or for their window, which starts with the first of them.
    mutating func next(maxBatch: Int) -> Next {
        guard !waiting.isEmpty else { return .wait }
        if waiting.count >= maxBatch || (waiting.count >= lastBatch && (running == 0 || (running == 1 && lastBatch > 1))) {
            return .send(takeBatch(max: maxBatch))
        }
        guard window == nil else { return .wait }
        let started = number()
        window = started
        return .startWindow(started)
    }

    /// The waiting calls of the next batch, now counted as being run.
    mutating func takeBatch(max: Int) -> [LaneWaiter] {
        let batch = Array(waiting.prefix(max))
        waiting.removeFirst(batch.count)
        window = nil
        running += 1
        lastBatch = batch.count
        return batch
    }
}
