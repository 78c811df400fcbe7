@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// "Send it again?" decided from facts alone: no server, no connection, no clock.
struct SendAgainTests {
    /// A case: the facts of a failed attempt, and the answer they must get.
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let facts: SendAgain
        let answer: SendAgain.Answer
        var testDescription: String { name }
    }

    static let written = StatementDelivery(written: true, endedUnread: false, first: true, cancelled: false)
    static let unwritten = StatementDelivery(written: false, endedUnread: false, first: true, cancelled: false)
    static let endedUnread = StatementDelivery(written: true, endedUnread: true, first: true, cancelled: false)

    static func facts(
        _ failure: SendAgain.Failure, _ stage: SendAgain.Stage = .running(bodyStarted: true), _ delivery: StatementDelivery? = written,
        _ change: (inout SendAgain) -> Void = { _ in }
    ) -> SendAgain {
        var facts = SendAgain(failure: failure, stage: stage, delivery: delivery)
        facts.hosts = 1
        facts.maxConnections = 4
        change(&facts)
        return facts
    }

    static func later(_ delivery: StatementDelivery) -> StatementDelivery {
        var later = delivery
        later.first = false
        return later
    }

    static func cancelledDuring(_ delivery: StatementDelivery) -> StatementDelivery {
        var cancelled = delivery
        cancelled.cancelled = true
        return cancelled
    }

    static let cases: [Case] = [
        // A statement that never ran.
        Case(
            name: "first statement refused on a closed connection: again", facts: facts(.hostGone, .running(bodyStarted: true), unwritten),
            answer: .sendAgain),
        Case(
            name: "first statement ended unread by the server: again", facts: facts(.hostGone, .running(bodyStarted: true), endedUnread),
            answer: .sendAgain),
        Case(
            name: "ended unread, but through a pooler: not known unread",
            facts: facts(.hostGone, .running(bodyStarted: true), endedUnread) { $0.throughPooler = true }, answer: .fail),
        Case(
            name: "refused unwritten through a pooler: never left the client",
            facts: facts(.hostGone, .running(bodyStarted: true), unwritten) { $0.throughPooler = true }, answer: .sendAgain),
        Case(
            name: "a later statement refused unwritten: earlier ones ran",
            facts: facts(.hostGone, .running(bodyStarted: true), later(unwritten)), answer: .fail),
        Case(
            name: "a later statement ended unread: earlier ones ran",
            facts: facts(.hostGone, .running(bodyStarted: true), later(endedUnread)), answer: .fail),
        Case(
            name: "unwritten but cancelled: not again", facts: facts(.hostGone, .running(bodyStarted: true), cancelledDuring(unwritten)),
            answer: .fail),
        Case(
            name: "never ran, then the task cancelled: not again",
            facts: facts(.hostGone, .running(bodyStarted: true), unwritten) { $0.cancelled = true }, answer: .fail),
        Case(
            name: "never ran while the pool shuts down: not again",
            facts: facts(.hostGone, .running(bodyStarted: true), unwritten) { $0.poolRunning = false }, answer: .fail),
        Case(
            name: "never ran, at the pool's worth of closed connections: again",
            facts: facts(.hostGone, .running(bodyStarted: true), unwritten) { $0.attempt = 5 }, answer: .sendAgain),
        Case(
            name: "never ran, past the pool's worth: not again",
            facts: facts(.hostGone, .running(bodyStarted: true), unwritten) { $0.attempt = 6 }, answer: .fail),
        Case(
            name: "never ran with any error class: again", facts: facts(.other, .running(bodyStarted: true), unwritten), answer: .sendAgain),
        // A statement the server may have run.
        Case(name: "connection lost after the write, single host: not again", facts: facts(.hostGone), answer: .fail),
        Case(
            name: "connection lost after the write, failover configured: not again", facts: facts(.hostGone) { $0.primaryMayMove = true },
            answer: .fail),
        Case(name: "a constraint violation: not again", facts: facts(.other), answer: .fail),
        Case(name: "no delivery known: not again", facts: facts(.hostGone, .running(bodyStarted: true), nil), answer: .fail),
        // The host went away before the call's work began.
        Case(
            name: "host gone before the body began, failover configured: again",
            facts: facts(.hostGone, .running(bodyStarted: false), nil) { $0.primaryMayMove = true }, answer: .sendAgain),
        Case(
            name: "host gone before the body began, single host: not again", facts: facts(.hostGone, .running(bodyStarted: false), nil),
            answer: .fail),
        Case(
            name: "host gone before the body began, past one try per host: not again",
            facts: facts(.hostGone, .running(bodyStarted: false), nil) {
                $0.primaryMayMove = true; $0.hosts = 2; $0.attempt = 3
            }, answer: .fail),
        // Replicas.
        Case(
            name: "a fetch on a replica whose host went: again",
            facts: facts(.hostGone) {
                $0.route = .replica(idempotent: true); $0.hosts = 2
            }, answer: .sendAgain),
        Case(
            name: "a stream on a replica whose host went after rows: not again",
            facts: facts(.hostGone) {
                $0.route = .replica(idempotent: false); $0.hosts = 2
            }, answer: .fail),
        Case(
            name: "a stream on a replica gone before it began: again",
            facts: facts(.hostGone, .running(bodyStarted: false), nil) {
                $0.route = .replica(idempotent: false); $0.hosts = 2
            }, answer: .sendAgain),
        Case(
            name: "a fetch on a replica, past one try per host: not again",
            facts: facts(.hostGone) {
                $0.route = .replica(idempotent: true); $0.hosts = 2; $0.attempt = 3
            }, answer: .fail),
        Case(
            name: "a replica's fetch that failed on a constraint-like error: not again",
            facts: facts(.other) { $0.route = .replica(idempotent: true) }, answer: .fail),
        // Serialization failures and deadlocks.
        Case(
            name: "deadlock of a single write: retried whole",
            facts: facts(.serializationOrDeadlock) {
                $0.atomic = true; $0.maxTransactionRetries = 3
            }, answer: .retryTransaction(retry: 1)),
        Case(
            name: "serialization failure, third retry of three",
            facts: facts(.serializationOrDeadlock) {
                $0.atomic = true; $0.maxTransactionRetries = 3; $0.transactionRetries = 2
            }, answer: .retryTransaction(retry: 3)),
        Case(
            name: "serialization failure after every retry: fails",
            facts: facts(.serializationOrDeadlock) {
                $0.atomic = true; $0.maxTransactionRetries = 3; $0.transactionRetries = 3
            }, answer: .fail),
        Case(name: "serialization failure of a read: never retried", facts: facts(.serializationOrDeadlock), answer: .fail),
        Case(
            name: "retries set to zero: fails at once",
            facts: facts(.serializationOrDeadlock) {
                $0.atomic = true; $0.maxTransactionRetries = 0
            }, answer: .fail),
        Case(
            name: "deadlock in a cancelled task: not retried",
            facts: facts(.serializationOrDeadlock) {
                $0.atomic = true; $0.maxTransactionRetries = 3; $0.cancelled = true
            }, answer: .fail),
        // Read-only refusals (a switchover).
        Case(
            name: "a write refused by a former primary: wait for the new one",
            facts: facts(.readOnly) {
                $0.atomic = true; $0.refusedByAFormerPrimary = true
            }, answer: .waitForAPrimary),
        Case(
            name: "refused read-only by a host still primary: the transaction was read-only", facts: facts(.readOnly) { $0.atomic = true },
            answer: .fail),
        Case(
            name: "refused by a former primary, patience spent",
            facts: facts(.readOnly) {
                $0.atomic = true; $0.refusedByAFormerPrimary = true; $0.withinPatience = false
            }, answer: .fail),
        Case(
            name: "refused by a former primary, not atomic: may have half-run",
            facts: facts(.readOnly) { $0.refusedByAFormerPrimary = true }, answer: .fail),
        Case(
            name: "refused read-only on a replica: not waited for",
            facts: facts(.readOnly) {
                $0.atomic = true; $0.refusedByAFormerPrimary = true; $0.route = .replica(idempotent: true)
            }, answer: .fail),
        // Prepared statements a pooler refused.
        Case(name: "a prepared statement refused by a pooler: again, unnamed", facts: facts(.preparedStatementRefused), answer: .sendAgain),
        Case(
            name: "refused again on the second attempt: again once more", facts: facts(.preparedStatementRefused) { $0.attempt = 2 },
            answer: .sendAgain),
        Case(name: "refused a third time: fails", facts: facts(.preparedStatementRefused) { $0.attempt = 3 }, answer: .fail),
        // Looking for a host.
        Case(
            name: "no primary answers during a failover: wait",
            facts: facts(.hostGone, .findingAHost, nil) {
                $0.connectionLost = true; $0.primaryMayMove = true; $0.primaryFoundBefore = true
            }, answer: .waitForAPrimary),
        Case(
            name: "no primary was ever found: fail at once",
            facts: facts(.hostGone, .findingAHost, nil) {
                $0.connectionLost = true; $0.primaryMayMove = true
            }, answer: .fail),
        Case(
            name: "single host unreachable: fail at once",
            facts: facts(.hostGone, .findingAHost, nil) {
                $0.connectionLost = true; $0.primaryFoundBefore = true
            }, answer: .fail),
        Case(
            name: "during a failover, patience spent: fail",
            facts: facts(.hostGone, .findingAHost, nil) {
                $0.connectionLost = true; $0.primaryMayMove = true; $0.primaryFoundBefore = true; $0.withinPatience = false
            }, answer: .fail),
        Case(
            name: "a host that refuses a login (not lost): fail",
            facts: facts(.other, .findingAHost, nil) {
                $0.primaryMayMove = true; $0.primaryFoundBefore = true
            }, answer: .fail),
    ]

    @Test(arguments: cases)
    func answers(_ testCase: Case) {
        #expect(testCase.facts.answer == testCase.answer, "\(testCase.name)")
    }

    @Test func neverRanIsAFirstUncancelledStatementTheServerDidNotRead() {
        #expect(Self.facts(.hostGone, .running(bodyStarted: true), Self.unwritten).neverRan)
        #expect(Self.facts(.hostGone, .running(bodyStarted: true), Self.endedUnread).neverRan)
        #expect(!Self.facts(.hostGone, .running(bodyStarted: true), Self.endedUnread) { $0.throughPooler = true }.neverRan)
        #expect(!Self.facts(.hostGone, .running(bodyStarted: true), Self.written).neverRan)
        #expect(!Self.facts(.hostGone, .running(bodyStarted: true), Self.later(Self.unwritten)).neverRan)
        #expect(!Self.facts(.hostGone, .running(bodyStarted: true), Self.cancelledDuring(Self.unwritten)).neverRan)
        #expect(!Self.facts(.hostGone, .running(bodyStarted: true), nil).neverRan)
    }

    @Test func errorsAreClassedByWhatTheySay() {
        #expect(SendAgain.Failure(StructPostgresError(.connectionLost, "lost")) == .hostGone)
        #expect(SendAgain.Failure(StructPostgresError(.server, "shutting down", sqlState: "57P01")) == .hostGone)
        #expect(SendAgain.Failure(StructPostgresError(.server, "link failure", sqlState: "08006")) == .hostGone)
        #expect(
            SendAgain.Failure(StructPostgresError(.serializationFailure, "serialization", sqlState: "40001")) == .serializationOrDeadlock)
        #expect(SendAgain.Failure(StructPostgresError(.deadlock, "deadlock", sqlState: "40P01")) == .serializationOrDeadlock)
        #expect(SendAgain.Failure(StructPostgresError(.server, "read-only", sqlState: "25006")) == .readOnly)
        #expect(SendAgain.Failure(StructPostgresError(.uniqueViolation, "duplicate", sqlState: "23505")) == .other)
    }

    // MARK: Invariants over random facts

    /// Every combination of facts, drawn at random (a fixed seed, printed on failure, and a fresh one).
    @Test(arguments: [0x5EED_0001, UInt64.random(in: 1...UInt64.max)])
    func invariantsHoldForRandomFacts(seed: UInt64) {
        var random = SplitMix(seed: seed)
        for _ in 0..<20_000 {
            let facts = SendAgain.random(using: &random)
            let answer = facts.answer
            let context = Comment(rawValue: "seed \(seed): \(facts) answered \(answer)")
            // A cancelled call never runs again.
            if facts.cancelled { #expect(answer == .fail, context) }
            // A statement the server may have run is never sent again outside a transaction: only a read that may run
            // twice, or a call PostgreSQL rolled back whole, runs again after one.
            if let delivery = facts.delivery, delivery.written, !delivery.endedUnread || facts.throughPooler || !delivery.first,
                facts.failure != .serializationOrDeadlock, case .running(true) = facts.stage, facts.route != .replica(idempotent: true)
            {
                if facts.failure != .preparedStatementRefused && facts.failure != .readOnly { #expect(answer == .fail, context) }
            }
            // A later statement of the call never makes it run again, whatever happened to it, unless the whole call
            // was rolled back by PostgreSQL or is an idempotent read.
            if let delivery = facts.delivery, !delivery.first, facts.failure == .hostGone, case .running(true) = facts.stage,
                facts.route != .replica(idempotent: true)
            {
                #expect(answer == .fail, context)
            }
            // A retried transaction only for what PostgreSQL rolled back whole, within the retries asked for.
            if case .retryTransaction(let retry) = answer {
                #expect(facts.failure == .serializationOrDeadlock, context)
                #expect(retry == facts.transactionRetries + 1 && retry <= (facts.maxTransactionRetries ?? -1), context)
            }
            // Waiting for a primary only on the primary's route, and only within the pool's acquireTimeout.
            if answer == .waitForAPrimary {
                #expect(facts.withinPatience && facts.primaryMayMove || facts.refusedByAFormerPrimary, context)
                #expect(facts.route == .primary || facts.stage == .findingAHost, context)
            }
            // Attempts are bounded: by the hosts and connections for a resend, by two for a refused prepared statement.
            if answer == .sendAgain {
                #expect(facts.attempt <= max(2, facts.hosts + facts.maxConnections), context)
            }
            // The answer depends on facts only: asking twice gives the same answer.
            #expect(facts.answer == answer, context)
        }
    }

    /// A whole call's attempts, one after another, as the runtime drives them: every sequence ends, within bounds.
    @Test(arguments: [0x5EED_0002, UInt64.random(in: 1...UInt64.max)])
    func everySequenceOfFailuresEnds(seed: UInt64) {
        var random = SplitMix(seed: seed)
        for _ in 0..<2_000 {
            var facts = SendAgain.random(using: &random)
            facts.attempt = 1
            facts.transactionRetries = 0
            facts.withinPatience = true
            var steps = 0
            var waits = 0
            loop: while true {
                steps += 1
                let answer = facts.answer
                switch answer {
                case .fail: break loop
                case .sendAgain: facts.attempt += 1
                case .waitForAPrimary:
                    waits += 1
                    facts.attempt += 1
                    // The runtime's patience runs out after some waits.
                    if waits > 50 { facts.withinPatience = false }
                case .retryTransaction(let retry):
                    facts.transactionRetries = retry
                    facts.attempt = 1
                }
                // Each attempt may fail differently, but the facts about the call stay.
                let next = SendAgain.random(using: &random)
                facts.failure = next.failure
                facts.delivery = next.delivery
                facts.stage = next.stage
                #expect(steps < 10_000, "seed \(seed): \(facts) did not end")
                if steps >= 10_000 { break }
            }
            let bound = (facts.hosts + facts.maxConnections + 2) * ((facts.maxTransactionRetries ?? 0) + 1) + 51
            #expect(steps <= bound + (facts.maxTransactionRetries ?? 0) + 1, "seed \(seed): \(steps) steps")
        }
    }
}

extension SendAgain {
    static func random(using random: inout SplitMix) -> SendAgain {
        let failures: [Failure] = [.hostGone, .serializationOrDeadlock, .readOnly, .preparedStatementRefused, .other]
        let stages: [Stage] = [.findingAHost, .running(bodyStarted: false), .running(bodyStarted: true)]
        let routes: [Route] = [.primary, .replica(idempotent: true), .replica(idempotent: false)]
        var facts = SendAgain(failure: failures.randomElement(using: &random)!, stage: stages.randomElement(using: &random)!)
        if case .running(true) = facts.stage, Bool.random(using: &random) {
            facts.delivery = StatementDelivery(
                written: .random(using: &random), endedUnread: .random(using: &random), first: .random(using: &random),
                cancelled: .random(using: &random))
        }
        facts.route = routes.randomElement(using: &random)!
        facts.atomic = .random(using: &random)
        facts.throughPooler = .random(using: &random)
        facts.attempt = .random(in: 1...12, using: &random)
        facts.maxTransactionRetries = Bool.random(using: &random) ? nil : .random(in: 0...5, using: &random)
        facts.transactionRetries = .random(in: 0...6, using: &random)
        facts.hosts = .random(in: 1...3, using: &random)
        facts.maxConnections = .random(in: 1...8, using: &random)
        facts.primaryMayMove = .random(using: &random)
        facts.primaryFoundBefore = .random(using: &random)
        facts.connectionLost = .random(using: &random)
        facts.refusedByAFormerPrimary = .random(using: &random)
        facts.poolRunning = .random(using: &random)
        facts.withinPatience = .random(using: &random)
        facts.cancelled = Int.random(in: 0..<5, using: &random) == 0
        return facts
    }
}
