@testable import StructPostgresVapor
import Testing

/// The signal that ends live responses when the app shuts down: work finishing first keeps its result, work still
/// running when it fires is cancelled at once, and work started after it is cancelled at once too.
@Suite struct ShutdownSignalTests {
    @Test func workEndsWhenTheSignalFiresAndNotBefore() async throws {
        let signal = ShutdownSignal()
        #expect(try await signal.cancelWhenTriggered { 42 } == 42)
        #expect(!signal.isTriggered)

        async let waited: Int? = signal.cancelWhenTriggered {
            try await Task.sleep(for: .seconds(60))
            return 1
        }
        try await Task.sleep(for: .milliseconds(100))
        let firing = ContinuousClock.now
        signal.trigger()
        #expect(try await waited == nil)
        #expect(ContinuousClock.now - firing < .seconds(1))

        let late = ContinuousClock.now
        let after = try await signal.cancelWhenTriggered {
            try await Task.sleep(for: .seconds(60))
            return 1
        }
        #expect(after == nil && ContinuousClock.now - late < .seconds(1))
    }

    @Test func aCancelledWaitReturnsAtOnce() async {
        let signal = ShutdownSignal()
        let waiting = Task { await signal.wait() }
        try? await Task.sleep(for: .milliseconds(50))
        let cancelling = ContinuousClock.now
        waiting.cancel()
        await waiting.value
        #expect(ContinuousClock.now - cancelling < .seconds(1))
        #expect(!signal.isTriggered)
    }
}
