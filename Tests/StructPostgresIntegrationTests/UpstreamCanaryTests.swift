import _ConnectionPoolModule
import Foundation
import Logging
import NIOCore
import PostgresNIO
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import StructPostgresTesting
import Synchronization
import Testing

/// Canaries of PostgresNIO (1.33.2) behaviours the library works around (CONTRIBUTING lists them all). Each calls
/// PostgresNIO directly and expects the behaviour to still be there: when one fails, upstream changed, and its
/// message names the workaround that may be deleted. Always against the server itself, never through a pooler.
@Suite struct UpstreamCanaryTests {
    private static var logger: Logger { Logger(label: "canary") }

    /// A raw connection to a fresh database, on the server itself.
    private func withRawConnection(_ body: (PostgresConnection, TestDatabase) async throws -> Void) async throws {
        let database = try await TestDatabase.create()
        do {
            let settings = try ConnectionSettings(url: database.directURL)
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 1, logger: Self.logger)
            try await body(connection, database)
            try? await connection.close()
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }

    /// `true` when `body` gave an answer (a value or an error) within `seconds`. `body` runs in a task of its own,
    /// left behind when it does not answer (a call PostgresNIO never answers cannot be awaited).
    private func answers(within seconds: Double, _ body: @escaping @Sendable () async throws -> Void) async -> Bool {
        let answered = ReleaseSignal()
        let call = Task {
            _ = try? await body()
            answered.signal()
        }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !answered.isSignalled && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        // Read before cancelling: the cancelled call ends at once, and would then count as answered.
        let wasAnswered = answered.isSignalled
        call.cancel()
        return wasAnswered
    }

    /// `EventLoopExecutor` / `sendingOnEventLoop`: PostgresNIO writes a statement to its channel without a promise
    /// (`PostgresConnection.query`), so a statement written once the connection has closed is dropped and its caller
    /// waits forever. vapor/postgres-nio#487 fixed it and #501 reverted the fix.
    @Test func aStatementWrittenAfterTheConnectionClosedIsNeverAnswered() async throws {
        try await withRawConnection { connection, _ in
            try await connection.close()
            let answered = await answers(within: 2) { _ = try await connection.query("SELECT 1", logger: Self.logger) }
            #expect(
                !answered,
                "PostgresNIO now answers a statement sent on a closed connection: EventLoopExecutor and sendingOnEventLoop can go")
        }
    }

    /// The refusal check (`ConnectionPool.open`, `LeaseStateMachine.connectFailed(_:refusedForGood:)`): PostgresNIO's
    /// pool retries a connection the server refuses for good (no such database, 3D000; authentication, class 28)
    /// with a backoff, and a query waits until its circuit breaker trips (60 s). vapor/postgres-nio#602 (duplicate
    /// of #489).
    @Test func aQueryOnAPoolWhoseDatabaseDoesNotExistWaits() async throws {
        let database = try await TestDatabase.create()
        var settings = try ConnectionSettings(url: database.directURL)
        settings.database = "structpg_no_such_database"
        let client = PostgresClient(
            configuration: .init(
                host: settings.host, port: settings.port, username: settings.user, password: settings.password,
                database: settings.database, tls: .disable))
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await client.run(); return false
            }
            let answered = await answers(within: 3) { _ = try await client.query("SELECT 1") }
            group.cancelAll()
            return answered
        }
        #expect(!answered, "PostgresNIO's pool now fails a query at once when the database does not exist: the refusal check can go")
        try await database.drop()
    }

    /// `StatementCanceller`: a task cancelled while PostgresNIO waits for a statement's result neither sends a cancel
    /// request nor closes the connection; the backend runs the statement to its end. No upstream issue found:
    /// PostgresNIO does not expose the connection's `BackendKeyData`.
    @Test func aCancelledTaskLeavesItsStatementRunningOnTheServer() async throws {
        try await withRawConnection { connection, database in
            let pid = try await connection.query("SELECT pg_backend_pid()", logger: Self.logger).get().rows[0].decode(Int32.self)
            let sleeper = Task { _ = try await connection.query("SELECT pg_sleep(60)", logger: Self.logger).get() }
            let state = try await PostgresService.withService(
                configuration: .init(connection: try ConnectionSettings(url: database.directURL))
            ) { other in
                try await Task.sleep(for: .milliseconds(300))
                sleeper.cancel()
                try await Task.sleep(for: .milliseconds(700))
                let state =
                    try await other.query("SELECT coalesce(state, '') || ' ' || query FROM pg_stat_activity WHERE pid = \(pid)")
                    .first.map { try $0.decode(String.self) } ?? "gone"
                _ = try await other.query("SELECT pg_terminate_backend(\(pid))")
                return state
            }
            #expect(
                state.hasPrefix("active") && state.contains("pg_sleep"),
                "PostgresNIO now stops a cancelled task's statement (\(state)): StatementCanceller can go")
            _ = await sleeper.result
        }
    }

    /// The acquire timeout (`LeaseStateMachine`'s deadlines, `acquireTimeout`): PostgresNIO's pool has no timeout for a
    /// lease; a request waits until it is served or cancelled. No upstream issue found.
    @Test func thePoolsConfigurationHasNoLeaseTimeout() {
        let fields = Set(Mirror(reflecting: ConnectionPoolConfiguration()).children.compactMap(\.label))
        #expect(
            !fields.contains { $0.lowercased().contains("timeout") && $0 != "idleTimeout" },
            "PostgresNIO's pool now has a lease timeout (\(fields.sorted())): the library's acquire deadlines may use it")
    }

    /// `SocketConnector`: PostgresNIO opens its sockets with no keepalive (nor `TCP_USER_TIMEOUT`), and neither its
    /// connection's nor its client's options have a setting for them. No upstream issue found. When this fails,
    /// PostgresNIO may set them itself: the library's own bootstrap (`Connections/SocketConnector.swift`) may go.
    @Test func aPostgresNIOConnectionHasNoKeepalive() async throws {
        let known: Set<String> = ["connectTimeout", "tlsServerName", "requireBackendKeyData", "additionalStartupParameters"]
        let options = Set(Mirror(reflecting: PostgresConnection.Configuration.Options()).children.compactMap(\.label))
        #expect(
            options == known,
            "PostgresNIO's connection options changed (\(options.sorted())): if they now set keepalive or TCP_USER_TIMEOUT, SocketConnector may go"
        )
        let clientOptions = Set(Mirror(reflecting: PostgresClient.Configuration.Options()).children.compactMap(\.label))
        #expect(
            !clientOptions.contains { $0.lowercased().contains("socket") || $0.lowercased().contains("tcp") },
            "PostgresNIO's client has socket options now (\(clientOptions.sorted())): SocketConnector may go")
        guard try await !TestPostgres.adminSettings().usesUnixSocket else { return }
        try await withRawConnection { connection, _ in
            let channel = try #require(connection.channelForWatching)
            let keepalive = try await channel.getOption(ChannelOptions.Types.SocketOption(level: .socket, name: .so_keepalive)).get()
            #expect(keepalive == 0, "PostgresNIO now switches keepalive on by itself: SocketConnector may go")
        }
    }

    /// `affectedRows` never prepares: PostgresNIO hands a prepared statement's command tag back only through
    /// `PSQLRowStream.commandTag`, which traps unless the rows were consumed (`execute(_:)` for a statement without
    /// rows). No upstream issue found. Run in a child process.
    @Test func aPreparedStatementsCommandTagStillTraps() async throws {
        let outcome = try await probe("driver-prepared-command-tag")
        #expect(
            outcome.hasPrefix("crashed"),
            "PostgresNIO now returns a prepared statement's command tag: affectedRows may prepare (\(outcome))")
    }

    /// `NumericText`: PostgresNIO decodes `numeric` to `Decimal` with `Decimal(string:)!`, which traps on a value
    /// beyond `Decimal`'s range. No upstream issue found. Run in a child process.
    @Test func aNumericBeyondDecimalStillTraps() async throws {
        let outcome = try await probe("driver-numeric-decimal")
        #expect(outcome.hasPrefix("crashed"), "PostgresNIO now decodes a huge numeric without trapping: NumericText may go (\(outcome))")
    }

    /// The outcome of the fault probe's `scenario` on a fresh database: its `outcome:` line, or `crashed (status)`.
    private func probe(_ scenario: String) async throws -> String {
        let database = try await TestDatabase.create()
        do {
            let result = try await CLI.run(
                [scenario], environment: ["DATABASE_URL": database.directURL, "SWIFT_BACKTRACE": "enable=no"],
                binary: CLI.product("StructPostgresFaultProbe"))
            try await database.drop()
            if result.output.contains("outcome:") { return String(result.output.prefix(160)) }
            // A trap ends the process with a signal (SIGILL or SIGTRAP), not with an error of the probe's.
            return result.signalled ? "crashed (signal \(result.status))" : "failed (\(result.status)): \(result.errors.suffix(300))"
        } catch {
            try? await database.drop()
            throw error
        }
    }
}
