import NIOCore
import PostgresNIO
import Synchronization
import StructPostgresCore

/// Runs a task's jobs on a NIO event loop, so that what a statement does up to its write to the channel happens on
/// the thread that also closes the connection.
///
/// PostgresNIO writes a statement to its channel without a promise: written after the connection has closed (its
/// pipeline gone), the statement is dropped and its caller waits forever. Checked on another thread, "still open"
/// can be stale by the time the write reaches the event loop; checked on the event loop, with the write made
/// there at once, it cannot (see ``PostgresConnection/sendingOnEventLoop(sql:_:)``). Upstream: vapor/postgres-nio#487
/// fixed it and #501 reverted the fix; canary: `aStatementWrittenAfterTheConnectionClosedIsNeverAnswered`.
final class EventLoopExecutor: TaskExecutor, Sendable {
    let eventLoop: any EventLoop

    private init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    private static let executors = Guarded<[ObjectIdentifier: EventLoopExecutor]>([:])

    /// The executor of `eventLoop`, one per loop.
    static func of(_ eventLoop: any EventLoop) -> EventLoopExecutor {
        executors.withLock { executors in
            let id = ObjectIdentifier(eventLoop)
            if let known = executors[id] { return known }
            let made = EventLoopExecutor(eventLoop: eventLoop)
            executors[id] = made
            return made
        }
    }
}

extension PostgresConnection {
    /// Runs `send`, which sends statements on this connection and reads their results, on the connection's event
    /// loop, after checking there that the connection is open: a statement is then either written while the
    /// connection can still answer it (with its result or an error) or refused here, never dropped unanswered.
    /// The caller's task goes back to the global executor when `send` returns.
    func sendingOnEventLoop<T>(sql: String? = nil, _ send: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(EventLoopExecutor.of(eventLoop)) {
            try await checkedOnEventLoop(sql: sql, send)
        }
    }

    /// `@concurrent`: entered on the task's preferred executor, the event loop (a `nonisolated(nonsending)`
    /// function would start on the caller's thread; before Swift 6.2 every nonisolated async function is entered
    /// on the preferred executor).
    #if compiler(>=6.2)
    @concurrent
    #endif
    private func checkedOnEventLoop<T>(sql: String?, _ send: () async throws -> T) async throws -> T {
        guard !isClosed else { throw Self.closed(sql: sql) }
        return try await send()
    }

    /// The error of a statement refused because its connection has closed: it never ran.
    static func closed(sql: String?) -> StructPostgresError {
        StructPostgresError(
            .connectionLost, "the connection to the server is closed", sql: sql.map(maskingLiterals),
            underlying: ConnectionClosedBeforeWriting())
    }
}
