import PostgresNIO
import Synchronization

/// The coalesced single-row upserts of one entity type under one conflict rule (see ``WriteCoalescing``).
///
/// A call that finds nothing of its lane being written or waiting, after a write of one call, is written at once,
/// in its own task. Otherwise it waits with the others until a write of the lane ends, as many calls as the last
/// batch held have come (when nothing is being written: the callers of a batch tend to come back together), the
/// window ends or the batch is full; the batch is then written in a task of its own, so that no caller's
/// cancellation reaches another caller's row. A caller
/// cancelled while it waits leaves the batch; one cancelled after its batch was sent gets the batch's outcome.
final class CoalescingLane<E: EntityProtocol>: Sendable {
    /// Writes entities in order, with one result each; it must be all or nothing.
    typealias Write = @Sendable ([E]) async throws -> [UpsertResult]

    private struct Waiter {
        let id: UInt64
        let entity: E
        /// How this call writes; a batch is written the way its first call would (its trace, say).
        let write: Write
        let continuation: CheckedContinuation<UpsertResult, any Error>
    }

    private enum Next {
        case wait, send([Waiter]), startWindow(UInt64)
    }

    private struct State {
        var waiting: [Waiter] = []
        /// Batches being written.
        var writing = 0
        /// The window of the waiting calls, while it runs: the number it was started with.
        var window: UInt64?
        var lastNumber: UInt64 = 0
        /// How many calls the last write held: as many are expected to come back together.
        var lastBatch = 1

        mutating func number() -> UInt64 {
            lastNumber += 1
            return lastNumber
        }

        /// What the waiting calls do now: go as a batch when it is full, or when nothing is being written and as many
        /// have come as the last batch held (its callers tend to come back together); otherwise wait for a write to
        /// end or for their window, which starts with the first of them.
        mutating func next(maxBatch: Int) -> Next {
            guard !waiting.isEmpty else { return .wait }
            if waiting.count >= maxBatch || (waiting.count >= lastBatch && (writing == 0 || (writing == 1 && lastBatch > 1))) {
                return .send(takeBatch(max: maxBatch))
            }
            guard window == nil else { return .wait }
            let started = number()
            window = started
            return .startWindow(started)
        }

        /// The waiting calls of the next batch, now counted as being written.
        mutating func takeBatch(max: Int) -> [Waiter] {
            let batch = Array(waiting.prefix(max))
            waiting.removeFirst(batch.count)
            window = nil
            writing += 1
            lastBatch = batch.count
            return batch
        }
    }

    private let state = Guarded(State())
    private let settings: WriteCoalescing
    private let background: BackgroundTasks

    init(settings: WriteCoalescing, background: BackgroundTasks) {
        self.settings = settings
        self.background = background
    }

    /// Calls waiting for a batch, and batches being written (a lone call counts as one).
    var load: (waiting: Int, writing: Int) { state.withLock { ($0.waiting.count, $0.writing) } }

    /// Upserts `entity` alone or with the concurrent calls of the lane; returns what was done to its row.
    func upsert(_ entity: E, write: @escaping Write) async throws -> UpsertResult {
        let alone = state.withLock { state in
            guard state.waiting.isEmpty, state.writing == 0, state.lastBatch == 1 else { return false }
            state.writing += 1
            return true
        }
        if alone {
            defer { finishedWriting() }
            return try await write([entity])[0]
        }
        let id = state.withLock { $0.number() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let next = state.withLock { state in
                    state.waiting.append(Waiter(id: id, entity: entity, write: write, continuation: continuation))
                    return state.next(maxBatch: settings.maxBatch)
                }
                act(on: next)
                if Task.isCancelled { withdraw(id) }
            }
        } onCancel: {
            withdraw(id)
        }
    }

    private func act(on next: Next) {
        switch next {
        case .wait: break
        case .send(let batch): send(batch)
        case .startWindow(let window):
            PostgresClient.defaultEventLoopGroup.any().scheduleTask(in: .nanoseconds(settings.window.nanoseconds)) {
                self.windowEnded(window)
            }
        }
    }

    /// The window of the waiting calls ended: they go as they are.
    private func windowEnded(_ window: UInt64) {
        let batch = state.withLock { state -> [Waiter]? in
            guard state.window == window else { return nil }
            state.window = nil
            return state.waiting.isEmpty ? nil : state.takeBatch(max: settings.maxBatch)
        }
        if let batch { send(batch) }
    }

    /// A write of the lane ended: the calls that gathered meanwhile go on as ``State/next(maxBatch:)`` says.
    private func finishedWriting() {
        act(on: state.withLock { state in
            state.writing -= 1
            return state.next(maxBatch: settings.maxBatch)
        })
    }

    /// Removes a cancelled caller that still waits, which then throws `queryCancelled`; its row is not written.
    private func withdraw(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            defer { if state.waiting.isEmpty { state.window = nil } }
            return state.waiting.remove(at: index)
        }
        waiter?.continuation.resume(throwing: StructPostgresError(
            .queryCancelled, "the task was cancelled while its upsert waited to be coalesced; its row was not sent"))
    }

    /// Writes `batch` in a task of the service's background (see ``BackgroundTasks``); once the service stopped, fails
    /// its calls with the reason.
    private func send(_ batch: [Waiter]) {
        let started = background.start {
            let outcomes = await Self.write(batch.map(\.entity), batch[0].write)
            self.finishedWriting()
            for (waiter, outcome) in zip(batch, outcomes) { waiter.continuation.resume(with: outcome) }
        }
        guard !started else { return }
        finishedWriting()
        let stopped = BackgroundTasks.stopped("the coalesced upsert was not sent")
        for waiter in batch { waiter.continuation.resume(throwing: stopped) }
    }

    /// Writes `entities` (`write` retries a deadlock or serialization failure as every write does); when the batch
    /// fails for what one of its rows holds, writes each half again on its own, in order, so that only the calls
    /// whose rows are at fault get the error.
    private static func write(_ entities: [E], _ write: Write) async -> [Result<UpsertResult, any Error>] {
        do {
            return try await write(entities).map { .success($0) }
        } catch let error as StructPostgresError where entities.count > 1 && isARowsFault(error) {
            let middle = entities.count / 2
            return await self.write(Array(entities[..<middle]), write) + self.write(Array(entities[middle...]), write)
        } catch {
            return entities.map { _ in .failure(error) }
        }
    }

    /// Whether an error comes from what a row holds: a value refused before sending, a constraint, a data
    /// exception or two rows the server holds for one (SQLSTATE classes 21, 22 and 23). Nothing of a failed
    /// statement was written, so its halves can be written again. Any other error reaches every call of the batch.
    private static func isARowsFault(_ error: StructPostgresError) -> Bool {
        let codes: [StructPostgresError.Code] = [
            .invalidValue, .unsupportedType, .uniqueViolation, .foreignKeyViolation, .notNullViolation, .checkViolation,
        ]
        return codes.contains(error.code) || ["21", "22", "23"].contains(error.sqlState?.prefix(2) ?? "")
    }
}
