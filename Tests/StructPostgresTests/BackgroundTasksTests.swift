@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Synchronization
import Testing

/// The service's background work runs inside `run()`: started before it waits for it, refused after it, cancelled
/// when it ends, and one job can be cancelled alone.
@Suite(.timeLimit(.minutes(1))) struct BackgroundTasksTests {
    private final class Count: Sendable {
        private let value = Atomic(0)
        func add() { value.add(1, ordering: .relaxed) }
        var now: Int { value.load(ordering: .relaxed) }
    }

    @Test func aJobStartedBeforeRunRunsWhenItStarts() async throws {
        let background = BackgroundTasks()
        let ran = ReleaseSignal()
        #expect(background.start { ran.signal() })
        #expect(!ran.isSignalled)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await background.run() }
            await ran.wait()
            background.finish()
        }
        #expect(ran.isSignalled)
    }

    @Test func finishingCancelsTheRunningJobsAndRunReturnsOnceTheyEnded() async throws {
        let background = BackgroundTasks()
        let cancelled = Count()
        let started = Count()
        for _ in 0..<3 {
            _ = background.start {
                started.add()
                do { try await Task.sleep(for: .seconds(60)) } catch { cancelled.add() }
            }
        }
        let runner = Task { await background.run() }
        while started.now < 3 { try await Task.sleep(for: .milliseconds(5)) }
        background.finish()
        await runner.value
        #expect(cancelled.now == 3)
    }

    @Test func aJobStartedAfterRunEndedIsRefused() async throws {
        let background = BackgroundTasks()
        background.finish()
        await background.run()
        #expect(!background.start {})
        #expect(background.startCancellable {} == nil)
    }

    @Test func aHandleCancelsItsJobAlone() async throws {
        let background = BackgroundTasks()
        let runner = Task { await background.run() }
        let first = ReleaseSignal()
        let second = ReleaseSignal()
        let secondCancelled = Count()
        let handle = try #require(
            background.startCancellable {
                do { try await Task.sleep(for: .seconds(60)) } catch { first.signal() }
            })
        _ = background.start {
            do { try await Task.sleep(for: .seconds(60)) } catch { secondCancelled.add() }
            second.signal()
        }
        handle.cancel()
        await first.wait()
        #expect(secondCancelled.now == 0)
        background.finish()
        await second.wait()
        await runner.value
        #expect(secondCancelled.now == 1)
    }

    /// A handle cancelled before its job started: the job starts cancelled.
    @Test func aHandleCancelledBeforeRunStartsItsJobCancelled() async throws {
        let background = BackgroundTasks()
        let sawCancellation = Count()
        let handle = try #require(
            background.startCancellable {
                do { try await Task.sleep(for: .seconds(60)) } catch { sawCancellation.add() }
            })
        handle.cancel()
        let runner = Task { await background.run() }
        try await Task.sleep(for: .milliseconds(200))
        background.finish()
        await runner.value
        #expect(sawCancellation.now == 1)
    }
}
