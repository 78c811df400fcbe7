import Foundation
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Synchronization
import Testing

private struct Tick: StoredModel {
    static let table = "ticks"
    var uuid: UUID
}

private typealias Lane = CoalescingLane<Tick, UpsertResult>
private typealias Write = @Sendable ([Tick]) async throws -> [UpsertResult]

extension CoalescingLane where Input == Tick, Output == UpsertResult {
    /// As the operation path calls a lane: at once when nothing else is in flight, otherwise submitted.
    fileprivate func upsert(_ tick: Tick, write: @escaping Write) async throws -> UpsertResult {
        if let alone = try await alone({ try await write([tick])[0] }) { return alone }
        return try await submit(tick) { ticks in
            do { return try await write(ticks).map { .success($0) } } catch { return ticks.map { _ in .failure(error) } }
        }
    }
}

/// The lane's scheduling alone: its writes are closures here, so that a test decides when a write ends. (What a
/// batch writes to PostgreSQL is tested against a server in `CoalescedWriteTests`.)
@Suite(.timeLimit(.minutes(1))) struct CoalescingLaneTests {
    static let withdrawn = "the task was cancelled while its upsert waited to be coalesced; its row was not sent"

    private final class Writes: Sendable {
        let sizes = Mutex<[Int]>([])
        /// Each write waits this long, so that calls gather behind it.
        let pause: Duration

        init(pause: Duration) { self.pause = pause }

        var write: Write {
            { [self] ticks in
                sizes.withLock { $0.append(ticks.count) }
                try await Task.sleep(for: pause)
                return ticks.map { _ in UpsertResult(inserted: 1) }
            }
        }
    }

    /// A lane whose batches run in background tasks of the test's own, ended when `body` returns.
    private func withLane(_ settings: WriteCoalescing, _ body: (Lane) async throws -> Void) async throws {
        let background = BackgroundTasks()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await background.run() }
            defer { background.finish() }
            try await body(Lane(window: settings.window, maxBatch: settings.maxBatch, background: background, withdrawn: Self.withdrawn))
        }
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }

    @Test func aCallAfterAWithdrawnCallWhoseWindowEndedIsStillSent() async throws {
        // A window long enough to see a call waiting in it on a loaded machine (the test polls every 10 ms).
        try await withLane(WriteCoalescing(window: .seconds(1))) { (lane: Lane) async throws in
            let writes = Writes(pause: .milliseconds(300))
            // A lone write, and three calls behind it: their batch makes the lane expect three calls at a time.
            let first = Task { try await lane.upsert(Tick(uuid: UUID()), write: writes.write) }
            try await waitUntil { lane.load.running == 1 }
            let behind = (0..<3).map { _ in Task { try await lane.upsert(Tick(uuid: UUID()), write: writes.write) } }
            _ = try await first.value
            for call in behind { _ = try await call.value }
            #expect(writes.sizes.withLock { $0 } == [1, 3])

            // A call now waits for others; cancelled, it leaves, and its window ends with nobody waiting.
            let withdrawn = Task { try await lane.upsert(Tick(uuid: UUID()), write: writes.write) }
            try await waitUntil { lane.load.waiting == 1 }
            withdrawn.cancel()
            let error = await #expect(throws: StructPostgresError.self) { try await withdrawn.value }
            #expect(error?.code == .queryCancelled)
            try await Task.sleep(for: .milliseconds(1_500))

            // The next call starts a window of its own and is written when it ends.
            let started = ContinuousClock.now
            #expect(try await lane.upsert(Tick(uuid: UUID()), write: writes.write) == UpsertResult(inserted: 1))
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(writes.sizes.withLock { $0 } == [1, 3, 1])
        }
    }

    @Test func callsOneAtATimeAreEachWrittenAtOnce() async throws {
        try await withLane(WriteCoalescing(window: .seconds(60))) { (lane: Lane) async throws in
            let writes = Writes(pause: .zero)
            for _ in 0..<5 { #expect(try await lane.upsert(Tick(uuid: UUID()), write: writes.write) == UpsertResult(inserted: 1)) }
            #expect(writes.sizes.withLock { $0 } == [1, 1, 1, 1, 1])
        }
    }

    /// Once the service stopped, a batch is not sent: its calls fail by name (a lone call is written in its own task).
    @Test func aBatchAfterTheServiceStoppedFailsItsCallsByName() async throws {
        let background = BackgroundTasks()
        background.finish()
        await background.run()
        let lane = Lane(window: .milliseconds(10), maxBatch: 256, background: background, withdrawn: Self.withdrawn)
        let writes = Writes(pause: .milliseconds(300))
        let alone = Task { try await lane.upsert(Tick(uuid: UUID()), write: writes.write) }
        try await waitUntil { lane.load.running == 1 }
        let behind = Task { try await lane.upsert(Tick(uuid: UUID()), write: writes.write) }
        #expect(try await alone.value == UpsertResult(inserted: 1))
        let error = await #expect(throws: StructPostgresError.self) { try await behind.value }
        #expect(error?.message.contains("the service has stopped") == true, "\(String(describing: error))")
        #expect(writes.sizes.withLock { $0 } == [1])
    }
}
