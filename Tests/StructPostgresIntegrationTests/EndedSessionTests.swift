import Dispatch
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import StructPostgresTesting
import Testing

/// A pooled connection whose server session has ended (the server restarting or failing over, an idle timeout)
/// while the client has not yet read so: a statement written to it is never read by the server, and the call runs
/// again on another connection instead of failing. A statement the server was running when it ended the session
/// is not sent again.
///
/// The race is made certain: the connection's event loop is held while the server ends the session, so that the
/// pool hands the connection out and the statement is written before the client reads the server's last message.
/// Always on the server itself, never through a pooler (PgBouncer keeps the client's connection open). In the serial
/// pass (`timed`): holding one of the process's event loops would stall the other tests' connections on it.
@Suite(.serialized, .tags(.timed), .timeLimit(.minutes(2)))
struct EndedSessionTests {
    /// A service of one connection, kept between calls, to a fresh database, and an administrator's connection on
    /// an event loop of its own (the service's loop is held while it ends the service's session).
    private func withService(_ body: (PostgresService, PostgresConnection) async throws -> Void) async throws {
        let database = try await TestDatabase.create(connections: 4)
        let direct = try ConnectionSettings(url: database.directURL)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let result: Result<Void, any Error>
        do {
            let admin = try await PostgresConnection.connect(
                on: group.next(), configuration: try direct.connectionConfiguration(), id: 1, logger: Logger(label: "admin")
            ).get()
            let pool = PoolOptions(maxConnections: 1, keepIdleConnectionsFor: .seconds(120))
            do {
                try await PostgresService.withService(configuration: .init(connection: direct, pool: pool)) { service in
                    try await service.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count int4 NOT NULL)")
                    try await body(service, admin)
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            try await admin.close()
        } catch {
            try? await group.shutdownGracefully()
            try await database.drop()
            throw error
        }
        try await group.shutdownGracefully()
        try await database.drop()
        try result.get()
    }

    /// Ends the session of the service's one connection on the server while the client cannot read, and runs
    /// `call` meanwhile: its statement is written before the client reads that the session ended.
    private func endingTheSession<T: Sendable>(
        of service: PostgresService, admin: PostgresConnection, during call: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let pool = service.runtime.router.hosts[0]
        let (pid, loop) = try await pool.withConnection { connection in
            let rows = try await connection.query("SELECT pg_backend_pid()", logger: Logger(label: "test")).get().rows
            return (try rows[0].decode(Int32.self), connection.eventLoop)
        }
        let gate = DispatchSemaphore(value: 0)
        loop.execute { gate.wait() }
        let ended: Bool
        do {
            let rows = try await admin.query("SELECT pg_terminate_backend(\(pid), 10000)", logger: Logger(label: "admin")).get().rows
            ended = try rows[0].decode(Bool.self)
        } catch {
            gate.signal()
            throw error
        }
        #expect(ended, "the server ended the session of the pooled connection")
        let running = Task { try await call() }
        // The call leases the connection (still open to the client), then waits for the held loop to write its
        // statement. Other tests of the process may keep the call's task from running for a while: waited for.
        let patience = ContinuousClock.now + .seconds(5)
        while pool.connectionsInUse == 0, ContinuousClock.now < patience { try? await Task.sleep(for: .milliseconds(5)) }
        #expect(pool.connectionsInUse == 1, "the call holds the connection whose session ended")
        try? await Task.sleep(for: .milliseconds(100))
        gate.signal()
        return try await running.value
    }

    @Test func aWriteToAConnectionWhoseSessionEndedRunsAgainOnAnother() async throws {
        try await withService { service, admin in
            let tally = Tally(uuid: UUID(), count: 1)
            _ = try await endingTheSession(of: service, admin: admin) { try await service.update(entities: [tally]) }
            #expect(try await service.fetch(Tally.self) == [tally])
        }
    }

    @Test func aTransactionOnAConnectionWhoseSessionEndedRunsAgainOnAnother() async throws {
        try await withService { service, admin in
            let tally = Tally(uuid: UUID(), count: 2)
            let counted = try await endingTheSession(of: service, admin: admin) {
                try await service.transaction { tx in
                    try await tx.update(entities: [tally])
                    return try await tx.count(Tally.self)
                }
            }
            #expect(counted == 1)
            #expect(try await service.fetch(Tally.self) == [tally])
        }
    }

    @Test func aReadOnAConnectionWhoseSessionEndedRunsAgainOnAnother() async throws {
        try await withService { service, admin in
            try await service.update(entities: [Tally(uuid: UUID(), count: 3)])
            let count = try await endingTheSession(of: service, admin: admin) { try await service.count(Tally.self) }
            #expect(count == 1)
        }
    }

    /// The server read the statement and was running it: it may have done part of its work (here a sequence's
    /// step, which no rollback undoes), so it fails with the server's reason and is not sent again.
    @Test func aStatementTheServerWasRunningWhenItEndedTheSessionIsNotSentAgain() async throws {
        try await withService { service, admin in
            try await service.execute(unsafeSQL: "CREATE SEQUENCE attempts")
            let pid = try await service.query("SELECT pg_backend_pid()")[0].decode(Int32.self)
            let running = Task { try await service.execute(unsafeSQL: "SELECT nextval('attempts'), pg_sleep(30)") }
            var waiting = false
            for _ in 0..<100 where !waiting {
                try await Task.sleep(for: .milliseconds(50))
                let rows = try await admin.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid) AND wait_event = 'PgSleep'", logger: Logger(label: "admin")
                ).get().rows
                waiting = try rows[0].decode(Int.self) == 1
            }
            #expect(waiting, "the statement is running")
            _ = try await admin.query("SELECT pg_terminate_backend(\(pid), 10000)", logger: Logger(label: "admin")).get()
            let error = await #expect(throws: StructPostgresError.self) { try await running.value }
            #expect(error?.sqlState == "57P01")
            #expect(
                error.map { SendAgain(failure: .init($0), stage: .running(bodyStarted: true), delivery: $0.delivery).neverRan } == false)
            #expect(try await service.query("SELECT last_value FROM attempts")[0].decode(Int.self) == 1, "sent once")
        }
    }
}
