import StructPostgresCore

/// The deadline of the calls a task makes: set by `PostgresService.withDeadline` / `withTimeout` for a scope, and by
/// ``PoolOptions/callTimeout`` for each lease of a pooled connection; the earliest applies.
///
/// It bounds what a call waits for: a connection from the pool (``ConnectionPool``), and each statement until the
/// server is ready for the next (``StatementCanceller/cancellable(on:sql:_:)``, which closes the connection when the
/// deadline passes, since what state it is left in cannot be known). A statement is not sent once it has passed.
/// Work between statements is not interrupted.
package enum CallDeadline {
    package typealias Instant = ContinuousClock.Instant

    /// The deadline of the current task's calls; `nil`: none.
    @TaskLocal package static var current: Instant?

    /// Runs `body` with `deadline`, or with the deadline already set when that one is earlier.
    package static func within<T>(_ deadline: Instant, _ body: () async throws -> T) async rethrows -> T {
        let earliest = current.map { min($0, deadline) } ?? deadline
        return try await $current.withValue(earliest, operation: body)
    }

    /// The call's deadline passed while it waited for a connection: nothing was sent.
    static func passedWaiting(_ detail: String) -> StructPostgresError {
        StructPostgresError(
            .deadlineExceeded, "the call passed its deadline while it waited for a connection (\(detail)); nothing was sent")
    }

    /// The call's deadline had passed when a statement was to be sent: it was not sent.
    static func passedBeforeSending(sql: String?) -> StructPostgresError {
        StructPostgresError(
            .deadlineExceeded, "the call had passed its deadline; the statement was not sent", sql: sql.map(maskingLiterals))
    }

    /// The call's deadline passed while a statement ran: its connection was closed under it.
    static func passedWhileRunning(sql: String?) -> StructPostgresError {
        StructPostgresError(
            .deadlineExceeded,
            "the call passed its deadline while the statement ran: its connection was closed, which stops the statement on the server once the server notices. Whether it took effect (a write outside a transaction, or a COMMIT) is unknown: check before running it again",
            sql: sql.map(maskingLiterals), underlying: StatementCanceller.Stopped())
    }
}
