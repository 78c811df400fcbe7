import Foundation
import StructPostgres
import Synchronization
import Testing

private struct TimedTally: StoredModel, Equatable {
    static let table = "tallies"
    let uuid: UUID
    var count: Int32
}

/// A call's deadline (`PostgresService.withTimeout`, `PoolOptions.callTimeout`) ends it within 100 ms of the deadline,
/// with `deadlineExceeded`: waiting for a connection, or while its statement runs, whose connection is then closed and
/// never reused. Timed: run one test at a time.
@Suite(.tags(.timed)) struct DeadlineTests {
    private static let schema = "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)"
    private static let tolerance = Duration.milliseconds(100)

    /// Runs `work` and returns its error and how long after `start + deadline` it ended.
    private func timed(
        _ deadline: Duration, _ work: () async throws -> Void
    ) async -> (error: StructPostgresError?, late: Duration) {
        let start = ContinuousClock.now
        var failure: StructPostgresError?
        do {
            try await work()
        } catch {
            failure = error as? StructPostgresError ?? StructPostgresError(.client, "\(error)")
        }
        return (failure, ContinuousClock.now - start - deadline)
    }

    private func backends(running marker: String, _ service: PostgresService) async throws -> Int {
        let rows = try await service.query(
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%' || \(marker) || '%'
            """)
        return Int(try rows[0].decode(Int64.self))
    }

    private func waitUntilStopped(_ marker: String, _ service: PostgresService) async throws -> Bool {
        for _ in 0..<200 {
            if try await backends(running: marker, service) == 0 { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test func aStatementPastItsDeadlineEndsWithinAHundredMilliseconds() async throws {
        try await withTables(Self.schema) { (service: PostgresService, _: StatementLog) async throws in
            for timeout in [Duration.milliseconds(150), .milliseconds(400), .seconds(1)] {
                // Ends 0.5 to 3 ms late, but once in CI's timed pass (the network cuts' lane and the examples' build
                // beside it) 232 ms: a read, so a late one runs once more, and two late in a row fail.
                var lates: [Duration] = []
                for _ in 0..<2 where lates.allSatisfy({ $0 >= Self.tolerance }) {
                    let (error, late) = await timed(timeout) {
                        try await PostgresService.withTimeout(timeout) {
                            _ = try await service.query("SELECT pg_sleep(5) AS structpg_deadline_sleep")
                        }
                    }
                    print("a statement with a \(timeout) deadline ended \(late) after it")
                    lates.append(late)
                    #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
                    #expect(error?.message.contains("while the statement ran") == true)
                    #expect(error?.sql?.contains("pg_sleep") == true)
                    #expect(late >= .zero, "ended \(late) after its deadline")
                    #expect(try await waitUntilStopped("structpg_deadline_sleep", service), "the server stops the statement")
                }
                #expect(lates.contains { $0 < Self.tolerance }, "ended \(lates) after its deadline")
            }
            #expect(service.connectionsInUse == 0)
            #expect(try await rowCount("tallies", service) == 0, "the pool goes on")
        }
    }

    @Test func aWritePastItsDeadlineSaysItsOutcomeIsUnknownAndIsNotSentAgain() async throws {
        try await withTables(Self.schema) { service, log in
            let (error, late) = await timed(.milliseconds(300)) {
                try await PostgresService.withTimeout(.milliseconds(300)) {
                    try await service.execute(unsafeSQL: "INSERT INTO tallies SELECT gen_random_uuid(), 1 FROM pg_sleep(2)")
                }
            }
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
            #expect(error?.message.contains("unknown") == true, "a write says its outcome is unknown: \(String(describing: error))")
            #expect(late < Self.tolerance)
            #expect(log.all.filter { $0.hasPrefix("INSERT") }.count == 1, "never sent again: \(log.all)")
            try await Task.sleep(for: .seconds(2))
            #expect(try await rowCount("tallies", service) == 0, "the server stopped it when its connection closed")
        }
    }

    @Test func aTransactionPastItsDeadlineRollsBack() async throws {
        try await withTables(Self.schema) { (service: PostgresService, log: StatementLog) async throws in
            let (error, late) = await timed(.milliseconds(400)) {
                try await PostgresService.withTimeout(.milliseconds(400)) {
                    try await service.transaction { tx in
                        try await tx.update(entities: [TimedTally(uuid: UUID(), count: 1)])
                        _ = try await tx.query("SELECT pg_sleep(2)")
                    }
                }
            }
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
            #expect(late < Self.tolerance)
            #expect(!log.all.contains("COMMIT"))
            #expect(try await rowCount("tallies", service) == 0)
        }
    }

    @Test func aCallWaitingForAConnectionEndsAtItsDeadline() async throws {
        try await withTables(Self.schema, pool: PoolOptions(maxConnections: 1)) { service, _ in
            let holder = Task { try await service.transaction { tx in _ = try await tx.query("SELECT pg_sleep(1.5)") } }
            while service.connectionsInUse == 0 { try await Task.sleep(for: .milliseconds(5)) }
            let (error, late) = await timed(.milliseconds(250)) {
                try await PostgresService.withTimeout(.milliseconds(250)) { _ = try await service.count(TimedTally.self) }
            }
            print("a call waiting for a connection with a 250 ms deadline ended \(late) after it")
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
            #expect(error?.message.contains("waited for a connection") == true)
            #expect(late >= .zero && late < Self.tolerance)
            try await holder.value
            #expect(try await service.count(TimedTally.self) == 0)
        }
    }

    @Test func aDeadlinePassedAlreadySendsNothing() async throws {
        try await withTables(Self.schema) { service, _ in
            _ = try await service.count(TimedTally.self)
            let error = await #expect(throws: StructPostgresError.self) {
                try await PostgresService.withDeadline(.now - .seconds(1)) {
                    try await service.update(entities: [TimedTally(uuid: UUID(), count: 1)])
                }
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(error?.message.contains("not sent") == true, "\(String(describing: error))")
            #expect(try await rowCount("tallies", service) == 0)
        }
    }

    @Test func anInnerDeadlineCannotOutlastAnOuterOne() async throws {
        try await withTables(Self.schema) { (service: PostgresService, _: StatementLog) async throws in
            let (error, late) = await timed(.milliseconds(200)) {
                try await PostgresService.withTimeout(.milliseconds(200)) {
                    try await PostgresService.withTimeout(.seconds(10)) { _ = try await service.query("SELECT pg_sleep(2)") }
                }
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(late < Self.tolerance)
        }
    }

    @Test func theConfiguredCallTimeoutBoundsEveryCall() async throws {
        // Long enough for the setup's first connection and DDL on a loaded machine: it bounds those calls too.
        var pool = PoolOptions(maxConnections: 2)
        pool.callTimeout = .seconds(2)
        try await withTables(Self.schema, pool: pool) { (service: PostgresService, _: StatementLog) async throws in
            _ = try await service.count(TimedTally.self)
            let (error, late) = await timed(.seconds(2)) { _ = try await service.query("SELECT pg_sleep(5)") }
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
            #expect(late < Self.tolerance)
            // A shorter deadline of the call's own wins.
            let (earlier, lateToo) = await timed(.milliseconds(100)) {
                try await PostgresService.withTimeout(.milliseconds(100)) { _ = try await service.query("SELECT pg_sleep(2)") }
            }
            #expect(earlier?.code == .deadlineExceeded)
            #expect(lateToo < Self.tolerance)
            #expect(try await service.count(TimedTally.self) == 0)
        }
    }

    /// Single-row upserts and deletes and point reads are coalesced by default, their batch run by a task of the
    /// lane's; under a deadline of their own they run alone, so the deadline holds. Another transaction holds the
    /// table, so each call waits on its lock until the deadline stops it.
    private final class Outcomes: Sendable {
        let list = Mutex<[(String, StructPostgresError?, Duration)]>([])
    }

    @Test func coalescibleCallsUnderADeadlineKeepIt() async throws {
        try await withTables(Self.schema) { service, _ in
            let (row, other) = (TimedTally(uuid: UUID(), count: 0), TimedTally(uuid: UUID(), count: 0))
            try await service.update(entities: [row, other])
            // The first fetch of a type reads its table's layout; point reads of it are coalesced from then on.
            _ = try await service.fetch(TimedTally.self, where: .equal("uuid", row.uuid))
            let locker = Task {
                try await service.transaction { tx in
                    try await tx.execute(unsafeSQL: "LOCK TABLE tallies IN ACCESS EXCLUSIVE MODE")
                    _ = try await tx.query("SELECT pg_sleep(2)")
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            let deadline = Duration.milliseconds(300)
            let outcomes = Outcomes()
            await withTaskGroup(of: Void.self) { group in
                let calls: [(String, @Sendable () async throws -> Void)] = [
                    ("upsert 1", { try await service.update(entities: [TimedTally(uuid: UUID(), count: 1)]) }),
                    ("upsert 2", { try await service.update(entities: [TimedTally(uuid: UUID(), count: 2)]) }),
                    ("delete 1", { _ = try await service.delete(entities: [row]) }),
                    ("delete 2", { _ = try await service.delete(entities: [other]) }),
                    ("point read 1", { _ = try await service.fetch(TimedTally.self, where: .equal("uuid", row.uuid)) }),
                    ("point read 2", { _ = try await service.fetch(TimedTally.self, where: .equal("uuid", other.uuid)) }),
                ]
                for (name, call) in calls {
                    group.addTask {
                        let (error, late) = await timed(deadline) { try await PostgresService.withTimeout(deadline) { try await call() } }
                        outcomes.list.withLock { $0.append((name, error, late)) }
                    }
                }
            }
            _ = try? await locker.value
            for (name, error, late) in outcomes.list.withLock({ $0 }) {
                print(
                    "\(name) under a 300 ms deadline, the table locked: ended \(late) after it, \(error.map { "\($0.code)" } ?? "succeeded")"
                )
                #expect(error?.code == .deadlineExceeded, "\(name): \(String(describing: error))")
                #expect(late < Self.tolerance, "\(name) ended \(late) after its deadline")
            }
            #expect(try await rowCount("tallies", service) == 2, "nothing past the deadline was written, no row deleted")
        }
    }

    @Test func badTimeoutsAreRefusedByName() async throws {
        for timeout in [Duration.zero, .milliseconds(-5)] {
            let error = await #expect(throws: StructPostgresError.self) { try await PostgresService.withTimeout(timeout) {} }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("PostgresService.withTimeout: the timeout") == true, "\(String(describing: error))")
        }
        var configuration = PostgresService.Configuration(connection: ConnectionSettings(user: "app"))
        configuration.pool.callTimeout = .seconds(-1)
        let error = #expect(throws: StructPostgresError.self) { _ = try PostgresService(configuration: configuration) }
        #expect(error?.message.contains("PoolOptions.callTimeout -1.0 seconds is not positive") == true, "\(String(describing: error))")
    }
}
