@testable import StructPostgres
import Testing

/// A request for a kept connection is answered once, whoever answers first.
@Suite(.timeLimit(.minutes(1))) struct KeepRequestTests {
    @Test func anAnswerGivenBeforeTheCallerWaitsIsKept() async {
        let request = KeepRequest()
        #expect(request.answer(nil))
        #expect(await request.wait() == nil)
        #expect(!request.answer(nil))
    }

    @Test func aCancelledCallerStopsWaitingAndTheHolderIsToldSo() async {
        let request = KeepRequest()
        let caller = Task { await request.wait() == nil }
        caller.cancel()
        #expect(await caller.value)
        // The holder that leases a connection afterwards must give it back itself.
        #expect(!request.answer(nil))
    }
}
