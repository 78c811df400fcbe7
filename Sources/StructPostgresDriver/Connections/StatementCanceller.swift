import Logging
import NIOCore
import PostgresNIO
import Synchronization
import StructPostgresCore

/// Stops the statement a cancelled task waits for, on the server as well as in the client.
///
/// PostgresNIO neither cancels a statement when its task is cancelled nor hands out the key of PostgreSQL's
/// cancel request. So before a connection's first statement, the canceller reads its backend's process id and
/// sets `client_connection_check_interval` (PostgreSQL 14 and later) for the session: a backend busy with a
/// statement then notices within that interval that its client has gone, and stops. Cancelling a statement
/// closes its connection, so that the call fails at once and the connection is never used again (no late
/// cancel can hit the next caller's statement). On a server without that setting, it also asks the server to
/// cancel the backend's statement with `pg_cancel_backend` over a short connection of its own.
///
/// The closing only reaches a server that still answers: before closing, the canceller checks that the server
/// acknowledges what is sent (``DeliveryProbe``), and the error of a statement cancelled during a silent cut says that
/// the server may still be running it. A call's deadline (``CallDeadline``) stops a statement the same way, at once.
///
/// Behind a transaction pooler (``PoolMode/transaction``) a connection has no backend of its own: neither is
/// done, and cancelling only closes the connection (the pooler then closes the server connection it was using).
/// Upstream: no issue found (PostgresNIO keeps `BackendKeyData` to itself); canary:
/// `aCancelledTaskLeavesItsStatementRunningOnTheServer`.
package final class StatementCanceller: Sendable {
    /// How often a backend running a statement checks that its client is still there.
    static let clientCheckInterval = "250ms"

    private struct Backend {
        let pid: Int32
        /// Whether the server stops the statement by itself once the connection is closed.
        let checksClient: Bool
    }

    private let backends = Guarded<[PostgresConnection.ID: Backend]>([:])
    /// Why a statement's connection is being closed under it, by connection: written when the task is cancelled or the
    /// deadline passes, read once the statement has failed.
    private let stops = Guarded<[ObjectIdentifier: Stop]>([:])
    /// When a statement last failed because the server stopped answering.
    private let foundSilent = Guarded<ContinuousClock.Instant?>(nil)
    private let settings: ConnectionSettings
    private let connectTimeout: Duration
    private let logger: Logger
    private let hasSessions: Bool
    private let background: BackgroundTasks

    init(settings: ConnectionSettings, connectTimeout: Duration, logger: Logger, background: BackgroundTasks) {
        self.background = background
        hasSessions = settings.poolMode == .session
        self.settings = settings
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    /// When a statement last failed because the server stopped answering (see ``notAnswering(sql:)``).
    var lastFoundSilent: ContinuousClock.Instant? { foundSilent.withLock { $0 } }

    /// Reads the backend process id of `connection` and sets its client check, once, before its first statement.
    func learnBackend(of connection: PostgresConnection) async throws {
        guard hasSessions else { return }
        let id = connection.id
        if backends.withLock({ $0[id] }) != nil { return }
        let query: PostgresQuery = """
            SELECT pg_backend_pid(), (SELECT set_config(name, \(Self.clientCheckInterval), false) FROM pg_settings
                                      WHERE name = 'client_connection_check_interval') IS NOT NULL
            """
        let rows = try await connection.sendingOnEventLoop { try await connection.query(query, logger: logger).get().rows }
        guard let (pid, checksClient) = try rows.first?.decode((Int32, Bool).self) else { return }
        let isNew = backends.withLock { $0.updateValue(Backend(pid: pid, checksClient: checksClient), forKey: id) == nil }
        if isNew {
            connection.closeFuture.whenComplete { [self] _ in _ = backends.withLock { $0.removeValue(forKey: id) } }
        }
    }

    /// Runs `operation`, a statement on `connection`, until the call's deadline (see ``CallDeadline``); if the task is
    /// cancelled meanwhile, or the deadline passes, the statement is cancelled on the server and the connection closed,
    /// so `operation` fails at once, with an error that says which and what reached the server. Past the deadline
    /// already, nothing is sent. `sql` names the statement in those errors.
    package func cancellable<T>(on connection: PostgresConnection, sql: String? = nil, _ operation: () async throws -> T) async throws -> T
    {
        let key = ObjectIdentifier(connection)
        var timer: (Scheduled<Void>, Armed)?
        if let deadline = CallDeadline.current {
            let left = deadline - .now
            guard left > .zero else { throw CallDeadline.passedBeforeSending(sql: sql) }
            let armed = Armed()
            timer = (
                connection.eventLoop.scheduleTask(in: TimeAmount(left)) { [self] in
                    let fires = stops.withLock { stops -> Bool in
                        guard !armed.finished, stops[key] == nil else { return false }
                        stops[key] = .deadline
                        return true
                    }
                    if fires { stop(connection) }
                }, armed
            )
        }
        do {
            let result = try await withTaskCancellationHandler(operation: operation) { cancel(connection) }
            if let (scheduled, armed) = timer {
                scheduled.cancel()
                stops.withLock { stops in
                    armed.finished = true
                    stops[key] = nil
                }
            } else if Task.isCancelled {
                stops.withLock { $0[key] = nil }
            }
            return result
        } catch {
            timer?.0.cancel()
            let stopped = stops.withLock { stops in
                timer?.1.finished = true
                return stops.removeValue(forKey: key)
            }
            switch stopped {
            case nil where SocketConnector.meansNoAnswer(error):
                foundSilent.withLock { $0 = .now }
                throw Self.notAnswering(sql: sql)
            case nil: throw error
            case .deadline: throw CallDeadline.passedWhileRunning(sql: sql)
            case .cancelled(let reached): throw Self.cancelled(reached: reached, sql: sql)
            }
        }
    }

    /// Cancels the statement running on `connection` for a cancelled task: checks first that the server still
    /// acknowledges what is sent (see ``DeliveryProbe``), then closes the connection (see ``stop(_:)``), unless the
    /// statement ended meanwhile. The statement fails once it is closed.
    func cancel(_ connection: PostgresConnection) {
        let key = ObjectIdentifier(connection)
        let first = stops.withLock { stops -> Bool in
            guard stops[key] == nil else { return false }
            stops[key] = .cancelled(reached: nil)
            return true
        }
        guard first else { return }
        DeliveryProbe.confirm(on: connection) { [self] reached in
            // A statement that ended meanwhile has given its connection back: it must not be closed under the next.
            let running = stops.withLock { stops -> Bool in
                guard case .cancelled = stops[key] else { return false }
                stops[key] = .cancelled(reached: reached)
                return true
            }
            if running { stop(connection) }
        }
    }

    /// Why a statement's connection was closed under it.
    private enum Stop {
        case deadline
        /// `reached`: whether the server acknowledged what was sent just before (`nil`: cannot tell).
        case cancelled(reached: Bool?)
    }

    /// Whether the statement a deadline timer is armed for has ended (read and written under the lock of `stops`).
    private final class Armed: @unchecked Sendable {
        var finished = false
    }

    /// Marks the errors of statements stopped here (``DatabaseSession`` keeps their account of what happened).
    struct Stopped: Error, Sendable {}

    /// The error of a statement cancelled for its task; `reached`: whether the server acknowledged what was sent just
    /// before the connection was closed.
    static func cancelled(reached: Bool?, sql: String?) -> StructPostgresError {
        let message =
            switch reached {
            case true?:
                "the task was cancelled: the statement was cancelled on the server and its connection closed"
            case false?:
                "the task was cancelled, but the server acknowledged nothing within \(DeliveryProbe.patience) (the network or the server is not answering): the connection was closed in the client, and the server may still be running the statement; whether it took effect is unknown"
            case nil:
                "the task was cancelled: its connection was closed, which stops the statement on the server once the server notices"
            }
        return StructPostgresError(
            .queryCancelled, message, sqlState: SQLState.queryCanceled, sql: sql.map(maskingLiterals), underlying: Stopped())
    }

    /// The error of a statement whose connection TCP gave up on: nothing was acknowledged or answered for
    /// ``ConnectionSettings/tcpUserTimeout`` or the keepalive's probes.
    static func notAnswering(sql: String?) -> StructPostgresError {
        StructPostgresError(
            .connectionLost,
            "the server stopped answering and the connection was given up (TCP keepalive or TCP_USER_TIMEOUT: a dead link, or a server gone without a word); whether the statement took effect is unknown: check before running it again",
            sql: sql.map(maskingLiterals))
    }

    /// Closes `connection` and cancels what its backend is running.
    func stop(_ connection: PostgresConnection) {
        let backend = backends.withLock { $0[connection.id] }
        logger.debug("cancelling a statement", metadata: ["backend": "\(backend.map { String($0.pid) } ?? "unknown")"])
        connection.close().whenComplete { _ in }
        guard let backend, !backend.checksClient else { return }
        let pid = backend.pid
        let (settings, timeout, logger) = (self.settings, connectTimeout, self.logger)
        // Once the service stopped, the closed connection is all: its backend notices at its next read or write.
        _ = background.start {
            do {
                let side = try await settings.connect(timeout: timeout, logger: logger)
                do {
                    _ = try await side.sendingOnEventLoop { try await side.query("SELECT pg_cancel_backend(\(pid))", logger: logger).get() }
                } catch {
                    try? await side.close()
                    throw error
                }
                try? await side.close()
            } catch {
                logger.debug("the cancel request failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
