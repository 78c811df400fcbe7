import StructPostgresCore

/// "Send it again?": whether a call that failed runs again, and how, decided from what happened to its attempt and
/// the limits of the moment. A value with no side effect: ``ServiceRuntime/withSession(_:_:atomic:transactionRetries:_:)``
/// gathers the facts, asks, and does what the answer says.
///
/// The rules, each tested without a server (`SendAgainTests`):
/// - a cancelled call never runs again;
/// - a statement the server may have run is never sent again, unless its call is a read that may run twice (a fetch
///   on a replica) or PostgreSQL rolled it back whole (a serialization failure or deadlock of a call that is one
///   statement or one transaction): then the whole call runs again, up to `transactionRetries` times;
/// - a call whose first statement was never read by the server (its connection had closed, or the server ended the
///   session unread) runs again on another connection, at most once per host and connection of the pool;
/// - a call that had not reached the server when its host went away runs again on the primary found next;
/// - a write refused as read-only by a former primary (a switchover) waits for the new one, within the pool's
///   `acquireTimeout`.
package struct SendAgain: Sendable, Equatable {
    /// Where the call's connection came from.
    package enum Route: Sendable, Equatable {
        case primary
        /// `idempotent`: the read may run twice (a fetch, not a stream that has yielded rows).
        case replica(idempotent: Bool)
    }

    /// What the error says, in the classes that matter here.
    package enum Failure: Sendable, Equatable {
        /// The host is unreachable or shutting down (a lost connection, SQLSTATE class 08, `57P01`–`57P03`).
        case hostGone
        /// `40001` or `40P01`: PostgreSQL rolled the statement or transaction back whole.
        case serializationOrDeadlock
        /// `25006`: a write refused in a read-only transaction.
        case readOnly
        /// A pooler refused a named prepared statement before it ran (`42P05`, `26000`).
        case preparedStatementRefused
        /// Anything else: a constraint, a bad value, a timeout.
        case other
    }

    /// When the call failed: finding a host for its connection, or running on one.
    package enum Stage: Sendable, Equatable {
        /// Looking for the primary (or a replica): no connection yet, nothing sent.
        case findingAHost
        /// On a connection; `bodyStarted`: the call's work had begun (it may have sent statements).
        case running(bodyStarted: Bool)
    }

    /// What to do.
    package enum Answer: Sendable, Equatable {
        /// Run the call again at once, on another connection (or the pool's next).
        case sendAgain
        /// Wait a little for a writable primary, then run the call again.
        case waitForAPrimary
        /// Run the whole call again, as retry number `retry` (1-based), after a random delay.
        case retryTransaction(retry: Int)
        /// Give up: the caller gets the error.
        case fail
    }

    package var failure: Failure
    package var stage: Stage
    /// How far the failed statement got; `nil` when the error did not come from a statement.
    package var delivery: StatementDelivery?
    package var route: Route = .primary
    /// The call writes in one statement or one transaction: PostgreSQL rolls it back whole on an error.
    package var atomic = false
    /// The connection goes through a declared pooler (`pool_mode=transaction`), whose sessions are not the server's.
    package var throughPooler = false
    /// The attempt that failed, from 1; counted again from 1 after a retried transaction.
    package var attempt = 1
    /// How many times the call's whole work has run again after a serialization failure or deadlock.
    package var transactionRetries = 0
    /// At most this many such retries; `nil`: the call is not run again for them (a read).
    package var maxTransactionRetries: Int?
    /// The hosts listed for the service, replicas included.
    package var hosts = 1
    /// The pool's `maxConnections`: how many closed connections a call may meet in turn.
    package var maxConnections = 1
    /// The primary may move: several hosts are listed, or a role is asked for (`target_session_attrs`).
    package var primaryMayMove = false
    /// A primary was found before (a failover or switchover is under way when none answers now).
    package var primaryFoundBefore = false
    /// The error is a lost connection (not a server's message that it is shutting down or starting up).
    package var connectionLost = false
    /// The host that refused a write as read-only is no longer the primary (asked only then).
    package var refusedByAFormerPrimary = false
    /// The pool the call ran on still runs (it is not shutting down).
    package var poolRunning = true
    /// Time is left within the pool's `acquireTimeout` since the call began.
    package var withinPatience = true
    /// The task is cancelled.
    package var cancelled = false

    /// The statement never ran: nothing of the call was done, so it may run anywhere again.
    package var neverRan: Bool {
        guard let delivery, delivery.first, !delivery.cancelled else { return false }
        return !delivery.written || delivery.endedUnread && !throughPooler
    }

    /// The answer.
    package var answer: Answer {
        if cancelled { return .fail }
        switch stage {
        case .findingAHost:
            return connectionLost && primaryMayMove && primaryFoundBefore && withinPatience ? .waitForAPrimary : .fail
        case .running(let bodyStarted):
            switch failure {
            case .preparedStatementRefused:
                // Nothing ran; the next attempt sends statements unnamed.
                return attempt <= 2 ? .sendAgain : .fail
            case .readOnly:
                return atomic && route == .primary && withinPatience && refusedByAFormerPrimary ? .waitForAPrimary : .fail
            case .serializationOrDeadlock:
                guard let maxTransactionRetries, transactionRetries < maxTransactionRetries else { return .fail }
                return .retryTransaction(retry: transactionRetries + 1)
            case .hostGone, .other:
                guard failure == .hostGone || neverRan else { return .fail }
                guard attempt <= hosts + (neverRan ? maxConnections : 0) else { return .fail }
                if neverRan && poolRunning { return .sendAgain }
                switch route {
                case .replica(let idempotent):
                    return idempotent || !bodyStarted ? .sendAgain : .fail
                case .primary:
                    return failure == .hostGone && primaryMayMove && !bodyStarted ? .sendAgain : .fail
                }
            }
        }
    }
}

extension SendAgain.Failure {
    /// The class of `error`.
    package init(_ error: StructPostgresError) {
        if error.underlying is PreparedStatementRefused {
            self = .preparedStatementRefused
        } else if error.sqlState == SQLState.readOnlySQLTransaction {
            self = .readOnly
        } else if error.isRetryable {
            self = .serializationOrDeadlock
        } else if ConnectionRouter.meansHostGone(error) {
            self = .hostGone
        } else {
            self = .other
        }
    }
}

extension SendAgain {
    /// The facts of a failure at `stage`; the caller fills in the rest (the memberwise initializer is the tests').
    package init(failure: Failure, stage: Stage, route: Route = .primary, atomic: Bool = false) {
        self.init(failure: failure, stage: stage, delivery: nil, route: route, atomic: atomic)
    }
}
