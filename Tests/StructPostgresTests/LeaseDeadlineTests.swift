@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// The lease machine with calls' own deadlines (see `CallDeadline`): a call waits until the earlier of its deadline
/// and the acquire timeout, whatever its place in line.
struct LeaseDeadlineTests {
    typealias Machine = LeaseStateMachineTests.Machine
    typealias Connection = LeaseStateMachineTests.Connection
    static func at(_ milliseconds: Int) -> ContinuousClock.Instant { LeaseStateMachineTests.at(milliseconds) }

    @Test func aCallWaitingPastItsOwnDeadlineFailsAtItEvenBehindOthers() {
        var machine = LeaseStateMachineTests.machine(maximum: 1)
        _ = LeaseStateMachineTests.waits(&machine, 1)
        guard case .wait(let actions) = machine.lease(2, now: Self.at(0), deadline: Self.at(250)) else {
            Issue.record("call 2 did not wait")
            return
        }
        #expect(actions.armTimer == Self.at(250), "the timer comes forward to the earliest deadline")
        #expect(machine.timerFired(now: Self.at(249)).fail.isEmpty)
        let fired = machine.timerFired(now: Self.at(250))
        #expect(LeaseStateMachineTests.failed(fired) == ["2:pastDeadline"])
        #expect(fired.armTimer == Self.at(30_000), "call 1 still waits for its acquire timeout")
        #expect(machine.waiting == 1)
        // The connection asked for goes to the call still waiting.
        #expect(LeaseStateMachineTests.handed(machine.leased(Connection(1), now: Self.at(300))) == ["c1->1"])
    }

    @Test func aDeadlineAfterTheAcquireTimeoutLeavesTheTimeout() {
        var machine = LeaseStateMachineTests.machine(maximum: 1)
        guard case .wait = machine.lease(1, now: Self.at(0), deadline: Self.at(60_000)) else {
            Issue.record("call 1 did not wait")
            return
        }
        #expect(LeaseStateMachineTests.failed(machine.timerFired(now: Self.at(30_000))) == ["1:timedOut"])
    }

    @Test func aDeadlinePassedAlreadyFailsAtOnceUnlessAConnectionIsIdle() {
        var machine = LeaseStateMachineTests.machine()
        guard case .failed(.pastDeadline, let actions) = machine.lease(1, now: Self.at(10), deadline: Self.at(5)) else {
            Issue.record("a passed deadline did not fail the lease")
            return
        }
        #expect(actions.isEmpty)
        #expect(machine.waiting == 0 && machine.requested == 0)
        LeaseStateMachineTests.withIdle(&machine, Connection(1))
        guard case .connection = machine.lease(2, now: Self.at(10), deadline: Self.at(5)) else {
            Issue.record("an idle connection was not handed over")
            return
        }
    }

    @Test func aServedOrCancelledCallLeavesNoDeadlineBehind() {
        var machine = LeaseStateMachineTests.machine(maximum: 2)
        _ = machine.lease(1, now: Self.at(0), deadline: Self.at(100))
        _ = machine.lease(2, now: Self.at(0), deadline: Self.at(200))
        #expect(LeaseStateMachineTests.handed(machine.leased(Connection(1), now: Self.at(10))) == ["c1->1"])
        #expect(LeaseStateMachineTests.failed(machine.cancel(2)) == ["2:cancelled"])
        #expect(machine.timerFired(now: Self.at(500)).fail.isEmpty)
    }
}
