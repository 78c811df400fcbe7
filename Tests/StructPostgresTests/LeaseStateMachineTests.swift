@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// The lease state machine driven by events alone: mock connections, instants given by the test, no server.
struct LeaseStateMachineTests {
    final class Connection: CustomStringConvertible {
        let id: Int
        init(_ id: Int) { self.id = id }
        var description: String { "c\(id)" }
    }

    typealias Machine = LeaseStateMachine<Connection, String>

    static let start = ContinuousClock.now
    static func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    static func machine(maximum: Int = 2, keepIdleFor: Duration = .seconds(1), failsFast: Bool = false) -> Machine {
        Machine(.init(maximum: maximum, keepIdleFor: keepIdleFor, acquireTimeout: .seconds(30), failsFast: failsFast))
    }

    /// Leases `id` and expects it to wait; returns the actions.
    static func waits(_ machine: inout Machine, _ id: Int, at time: Int = 0) -> Machine.Actions {
        guard case .wait(let actions) = machine.lease(id, now: at(time)) else {
            Issue.record("lease \(id) did not wait")
            return Machine.Actions()
        }
        return actions
    }

    /// Gives `machine` one kept connection, idle.
    static func withIdle(_ machine: inout Machine, _ connection: Connection) {
        _ = waits(&machine, 100)
        _ = machine.leased(connection, now: at(0))
        _ = machine.release(connection, reusable: true, now: at(0))
    }

    static func handed(_ actions: Machine.Actions) -> [String] { actions.hand.map { "\($0.0)->\($0.to)" } }
    static func failed(_ actions: Machine.Actions) -> [String] { actions.fail.map { "\($0.0):\($0.1)" } }

    @Test func aKeptIdleConnectionIsLeasedAtOnce() {
        var machine = Self.machine()
        let connection = Connection(1)
        Self.withIdle(&machine, connection)
        guard case .connection(let leased) = machine.lease(1, now: Self.at(5)) else { Issue.record("no connection"); return }
        #expect(leased === connection)
        #expect(machine.inUse == 1 && machine.idleCount == 0)
    }

    @Test func withNoneKeptUnderTheMaximumACallAsksThePoolAndWaits() {
        var machine = Self.machine()
        let actions = Self.waits(&machine, 1)
        #expect(actions.requestUpstream == 1)
        #expect(actions.armTimer == Self.at(30_000))
        #expect(machine.waiting == 1 && machine.requested == 1)
    }

    @Test func aConnectionFromThePoolGoesToTheFirstWaitingCall() {
        var machine = Self.machine()
        _ = Self.waits(&machine, 1)
        _ = Self.waits(&machine, 2)
        let actions = machine.leased(Connection(7), now: Self.at(3))
        #expect(Self.handed(actions) == ["c7->1"])
        #expect(machine.waiting == 1 && machine.inUse == 1 && machine.requested == 1)
    }

    @Test func atTheMaximumACallWaitsWithoutAskingForMore() {
        var machine = Self.machine(maximum: 1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(Connection(1), now: Self.at(0))
        let actions = Self.waits(&machine, 2)
        #expect(actions.requestUpstream == 0)
        #expect(machine.requested == 0 && machine.kept == 1)
    }

    @Test func aConnectionGivenBackGoesStraightToAWaitingCall() {
        var machine = Self.machine(maximum: 1)
        let connection = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(connection, now: Self.at(0))
        _ = Self.waits(&machine, 2)
        let actions = machine.release(connection, reusable: true, now: Self.at(10))
        #expect(Self.handed(actions) == ["c1->2"])
        #expect(actions.releaseUpstream.isEmpty && machine.idleCount == 0 && machine.inUse == 1)
    }

    @Test func waitingCallsAreServedInTheOrderTheyCame() {
        var machine = Self.machine(maximum: 1)
        let connection = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(connection, now: Self.at(0))
        for id in 2...5 { _ = Self.waits(&machine, id, at: id) }
        var order: [Int] = []
        for step in 0..<4 { order += machine.release(connection, reusable: true, now: Self.at(10 + step)).hand.map(\.to) }
        #expect(order == [2, 3, 4, 5])
    }

    @Test func aCallWaitingPastTheAcquireTimeoutFailsAtTheTimer() {
        var machine = Self.machine(maximum: 1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(Connection(1), now: Self.at(0))
        _ = Self.waits(&machine, 2, at: 100)
        #expect(machine.timerFired(now: Self.at(29_999)).fail.isEmpty)
        let actions = machine.timerFired(now: Self.at(30_100))
        #expect(Self.failed(actions) == ["2:timedOut"])
        #expect(machine.waiting == 0)
    }

    @Test func oneTimerServesEveryDeadline() {
        var machine = Self.machine(maximum: 1)
        _ = Self.waits(&machine, 1)
        let second = Self.waits(&machine, 2, at: 50)
        #expect(second.armTimer == nil, "armed already for an earlier deadline")
        // Fired for the first deadline after that call was served: nothing fails, armed for the next.
        _ = machine.leased(Connection(1), now: Self.at(10))
        let actions = machine.timerFired(now: Self.at(30_000))
        #expect(actions.fail.isEmpty)
        #expect(actions.armTimer == Self.at(30_050))
    }

    @Test func aCancelledWaitingCallFailsOnceAndTheConnectionAskedForIsKept() {
        var machine = Self.machine()
        _ = Self.waits(&machine, 1)
        #expect(Self.failed(machine.cancel(1)) == ["1:cancelled"])
        #expect(machine.cancel(1).isEmpty, "answered once")
        let actions = machine.leased(Connection(1), now: Self.at(5))
        #expect(actions.hand.isEmpty && machine.idleCount == 1 && machine.requested == 0)
    }

    @Test func cancellingACallAlreadyServedDoesNothing() {
        var machine = Self.machine()
        _ = Self.waits(&machine, 1)
        _ = machine.leased(Connection(1), now: Self.at(0))
        #expect(machine.cancel(1).isEmpty)
        #expect(machine.inUse == 1)
    }

    @Test func aConnectionGivenBackClosedIsDroppedAndAWaitingCallGetsANewOne() {
        var machine = Self.machine(maximum: 1)
        let stale = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(stale, now: Self.at(0))
        _ = Self.waits(&machine, 2)
        let actions = machine.release(stale, reusable: false, now: Self.at(1))
        #expect(actions.hand.isEmpty)
        #expect(actions.releaseUpstream.isEmpty, "PostgresNIO's pool drops a closed connection itself")
        #expect(actions.requestUpstream == 1)
        #expect(Self.handed(machine.leased(Connection(2), now: Self.at(2))) == ["c2->2"])
    }

    @Test func aKeptIdleConnectionThatClosesIsDropped() {
        var machine = Self.machine()
        let connection = Connection(1)
        machine.connected()
        Self.withIdle(&machine, connection)
        machine.closed(connection)
        #expect(machine.idleCount == 0 && machine.open == 0)
        machine.closed(Connection(9))
        #expect(machine.idleCount == 0 && machine.open == 0, "not kept, and never below zero")
    }

    @Test func theConnectionUsedLastIsTakenFirst() {
        var machine = Self.machine()
        let (first, second) = (Connection(1), Connection(2))
        _ = Self.waits(&machine, 1)
        _ = Self.waits(&machine, 2)
        _ = machine.leased(first, now: Self.at(0))
        _ = machine.leased(second, now: Self.at(0))
        _ = machine.release(first, reusable: true, now: Self.at(1))
        _ = machine.release(second, reusable: true, now: Self.at(2))
        guard case .connection(let leased) = machine.lease(3, now: Self.at(3)) else { Issue.record("no connection"); return }
        #expect(leased === second)
    }

    @Test func aConnectionIdleForKeepIdleForGoesBackToThePool() {
        var machine = Self.machine()
        let connection = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(connection, now: Self.at(0))
        let released = machine.release(connection, reusable: true, now: Self.at(100))
        #expect(released.armTimer == Self.at(1_100))
        #expect(machine.timerFired(now: Self.at(1_099)).releaseUpstream.isEmpty)
        #expect(machine.timerFired(now: Self.at(1_100)).releaseUpstream.map(\.id) == [1])
        #expect(machine.kept == 0)
    }

    @Test func aLoneCallersConnectionComingBackKeepsTheTimerArmedForTheFirstIdleMoment() {
        var machine = Self.machine()
        let connection = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(connection, now: Self.at(0))
        #expect(machine.release(connection, reusable: true, now: Self.at(100)).armTimer == Self.at(1_100))
        for call in 2...4 {
            guard case .connection = machine.lease(call, now: Self.at(call * 100)) else { Issue.record("no connection"); return }
            let released = machine.release(connection, reusable: true, now: Self.at(call * 100 + 50))
            #expect(released.armTimer == nil, "armed already for an earlier moment")
        }
        // Fired for the first idle moment, the timer finds the connection used since and arms for its own.
        let fired = machine.timerFired(now: Self.at(1_100))
        #expect(fired.releaseUpstream.isEmpty && fired.armTimer == Self.at(1_450))
        #expect(machine.timerFired(now: Self.at(1_450)).releaseUpstream.map(\.id) == [1])
    }

    @Test func keepingNothingIdleGivesEveryConnectionBackAtOnce() {
        var machine = Self.machine(keepIdleFor: .zero)
        let connection = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(connection, now: Self.at(0))
        let actions = machine.release(connection, reusable: true, now: Self.at(1))
        #expect(actions.releaseUpstream.map(\.id) == [1] && actions.armTimer == nil)
    }

    @Test func aRefusalForGoodFailsEveryWaitingCallAtOnce() {
        var machine = Self.machine(maximum: 4)
        for id in 1...3 { _ = Self.waits(&machine, id) }
        let actions = machine.connectFailed("password authentication failed", refusedForGood: true)
        #expect(Self.failed(actions).count == 3)
        #expect(actions.fail.allSatisfy { if case .refused = $0.1 { true } else { false } })
        #expect(machine.waiting == 0)
    }

    @Test func afterARefusalCallsFailAtOnceAndOneLeaseStaysAskedForUntilAConnectionOpens() {
        var machine = Self.machine()
        _ = Self.waits(&machine, 1)
        _ = machine.connectFailed("no such database", refusedForGood: true)
        guard case .failed(.refused(let why), let actions) = machine.lease(2, now: Self.at(5)) else { Issue.record("did not fail"); return }
        #expect(why == "no such database")
        #expect(actions.requestUpstream == 0, "the first call's lease is still asked for")
        _ = machine.leaseFailed("circuit breaker")
        guard case .failed(_, let again) = machine.lease(3, now: Self.at(6)) else { Issue.record("did not fail"); return }
        #expect(again.requestUpstream == 1, "one lease is asked for again, so that the pool keeps trying")
        machine.connected()
        _ = machine.leased(Connection(1), now: Self.at(7))
        guard case .connection = machine.lease(4, now: Self.at(8)) else { Issue.record("still refused"); return }
    }

    @Test func aServerGoneThenBackLeavesCallsWaitingUntilAConnectionOpens() {
        var machine = Self.machine()
        _ = Self.waits(&machine, 1)
        #expect(machine.connectFailed("connection refused", refusedForGood: false).isEmpty)
        #expect(machine.connectFailed("connection refused", refusedForGood: false).isEmpty)
        machine.connected()
        #expect(Self.handed(machine.leased(Connection(1), now: Self.at(900))) == ["c1->1"])
    }

    @Test func aHostThatFailsFastFailsWaitingCallsWhenItCannotBeReachedWithNothingOpen() {
        var machine = Self.machine(failsFast: true)
        _ = Self.waits(&machine, 1)
        #expect(
            Self.failed(machine.connectFailed("connection refused", refusedForGood: false)) == ["1:unreachable(\"connection refused\")"])
    }

    @Test func aHostThatFailsFastWithAConnectionOpenKeepsCallsWaiting() {
        var machine = Self.machine(maximum: 1, failsFast: true)
        machine.connected()
        _ = Self.waits(&machine, 1)
        _ = machine.leased(Connection(1), now: Self.at(0))
        _ = Self.waits(&machine, 2)
        #expect(machine.connectFailed("too many clients", refusedForGood: false).isEmpty)
        #expect(machine.waiting == 1)
    }

    @Test func aPoolThatGivesUpConnectingFailsTheWaitingCalls() {
        var machine = Self.machine()
        _ = Self.waits(&machine, 1)
        _ = Self.waits(&machine, 2)
        let actions = machine.leaseFailed("circuit breaker tripped")
        #expect(actions.fail.map(\.0) == [1, 2])
        #expect(machine.requested == 1)
    }

    @Test func shuttingDownFailsWaitingCallsAndGivesIdleConnectionsBack() {
        var waiting = Self.machine(maximum: 3)
        _ = Self.waits(&waiting, 1)
        _ = Self.waits(&waiting, 2)
        #expect(Self.failed(waiting.shutDown()) == ["1:shutDown", "2:shutDown"])
        var idle = Self.machine(maximum: 3)
        Self.withIdle(&idle, Connection(1))
        #expect(idle.shutDown().releaseUpstream.map(\.id) == [1])
        guard case .failed(.shutDown, _) = idle.lease(3, now: Self.at(1)) else { Issue.record("leased after shutdown"); return }
    }

    @Test func afterShuttingDownConnectionsInUseAndLateLeasesGoBackToThePool() {
        var machine = Self.machine()
        let inUse = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = Self.waits(&machine, 2)
        _ = machine.leased(inUse, now: Self.at(0))
        _ = machine.shutDown()
        #expect(machine.release(inUse, reusable: true, now: Self.at(1)).releaseUpstream.map(\.id) == [1])
        #expect(machine.leased(Connection(2), now: Self.at(2)).releaseUpstream.map(\.id) == [2])
        #expect(machine.kept == 0 && machine.requested == 0)
    }

    @Test func manyWaitingCallsNeverAskForMoreThanTheMaximum() {
        var machine = Self.machine(maximum: 20)
        var asked = 0
        for id in 1...64 { asked += Self.waits(&machine, id).requestUpstream }
        #expect(asked == 20)
        #expect(machine.requested == 20 && machine.waiting == 64)
    }

    @Test func aClosedConnectionGivenBackWithNobodyWaitingAsksForNothing() {
        var machine = Self.machine()
        let connection = Connection(1)
        _ = Self.waits(&machine, 1)
        _ = machine.leased(connection, now: Self.at(0))
        let actions = machine.release(connection, reusable: false, now: Self.at(1))
        #expect(actions.isEmpty)
        #expect(machine.kept == 0)
    }

    /// Random events against the invariants: counts never negative, nothing kept or asked beyond the maximum,
    /// every call answered exactly once (with a connection at most one call holds at a time), and, once time has
    /// passed every deadline and the service has stopped, no call left waiting.
    @Test func invariantsHoldOverRandomEventSequences() {
        var generator = SplitMix(seed: 0x5EED)
        for sequence in 0..<1_000 {
            var machine = Self.machine(
                maximum: Int.random(in: 1...6, using: &generator), keepIdleFor: .milliseconds(Int.random(in: 0...50, using: &generator)),
                failsFast: Bool.random(using: &generator))
            var now = 0
            var nextID = 1
            var nextConnection = 1
            var answers: [Int: Int] = [:]
            var holding: [Int: Connection] = [:]
            var upstreamOwed = 0
            var heldIDs = Set<Int>()
            func apply(_ actions: Machine.Actions) {
                for (connection, id) in actions.hand {
                    answers[id, default: 0] += 1
                    #expect(!heldIDs.contains(connection.id), "sequence \(sequence): \(connection) handed to two calls")
                    heldIDs.insert(connection.id)
                    holding[id] = connection
                }
                for (id, _) in actions.fail { answers[id, default: 0] += 1 }
                upstreamOwed += actions.requestUpstream
            }
            for _ in 0..<60 {
                now += Int.random(in: 0...20, using: &generator)
                switch Int.random(in: 0..<10, using: &generator) {
                case 0, 1, 2:
                    let id = nextID
                    nextID += 1
                    let deadline = Bool.random(using: &generator) ? Self.at(now + Int.random(in: -10...40_000, using: &generator)) : nil
                    switch machine.lease(id, now: Self.at(now), deadline: deadline) {
                    case .connection(let connection):
                        answers[id, default: 0] += 1
                        #expect(!heldIDs.contains(connection.id), "sequence \(sequence): \(connection) leased twice")
                        heldIDs.insert(connection.id)
                        holding[id] = connection
                    case .wait(let actions): apply(actions)
                    case .failed(_, let actions):
                        answers[id, default: 0] += 1
                        apply(actions)
                    }
                case 3, 4:
                    if let (id, connection) = holding.randomElement(using: &generator) {
                        holding[id] = nil
                        heldIDs.remove(connection.id)
                        apply(machine.release(connection, reusable: Int.random(in: 0..<5, using: &generator) > 0, now: Self.at(now)))
                    }
                case 5:
                    if upstreamOwed > 0 {
                        upstreamOwed -= 1
                        machine.connected()
                        apply(machine.leased(Connection(nextConnection), now: Self.at(now)))
                        nextConnection += 1
                    }
                case 6:
                    if nextID > 1 { apply(machine.cancel(Int.random(in: 1..<nextID, using: &generator))) }
                case 7:
                    apply(machine.connectFailed("down", refusedForGood: Int.random(in: 0..<6, using: &generator) == 0))
                case 8:
                    now += Int.random(in: 0...40_000, using: &generator)
                    apply(machine.timerFired(now: Self.at(now)))
                default:
                    if upstreamOwed > 0, Bool.random(using: &generator) {
                        upstreamOwed -= 1
                        apply(machine.leaseFailed("gave up"))
                    }
                }
                #expect(machine.inUse >= 0 && machine.requested >= 0 && machine.waiting >= 0 && machine.open >= 0)
                #expect(machine.kept + machine.requested <= machine.configuration.maximum, "sequence \(sequence)")
                #expect(machine.inUse == holding.count, "sequence \(sequence)")
                #expect(answers.values.allSatisfy { $0 == 1 }, "sequence \(sequence): a call answered twice")
            }
            apply(machine.timerFired(now: Self.at(now + 31_000)))
            apply(machine.shutDown())
            #expect(machine.waiting == 0)
            #expect((1..<nextID).allSatisfy { answers[$0] == 1 }, "sequence \(sequence): a call never answered")
        }
    }
}

/// A seeded generator, so that a failing sequence can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
