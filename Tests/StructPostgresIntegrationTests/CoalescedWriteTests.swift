import Foundation
import PostgresNIO
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

private struct Reading: StoredModel, Equatable {
    static let table = "readings"
    static let create =
        "CREATE TABLE readings (uuid uuid PRIMARY KEY, value integer NOT NULL CONSTRAINT value_not_negative CHECK (value >= 0), note text)"
    var uuid: UUID
    var value: Int
    var note: String?
}

private struct DailyTotal: StoredModel {
    static let table = "daily_totals"
    static let uniqueKey = ["day"]
    static let create = "CREATE TABLE daily_totals (day date PRIMARY KEY, total integer NOT NULL)"
    var day: Date
    var total: Int
}

/// A probe and the reading it registers: a graph of two tables, written as a unit of work.
private struct Probe: EntityConvertible {
    static let create = "CREATE TABLE probes (uuid uuid PRIMARY KEY, reading_id uuid NOT NULL REFERENCES readings)"
    var uuid: UUID
    var reading: Reading

    func toEntity(context: EntityContext) throws -> ProbeEntity {
        ProbeEntity(uuid: uuid, readingID: try context.insert(reading).uuid)
    }
}

private struct ProbeEntity: EntityProtocol {
    static let table = "probes"
    var uuid: UUID
    var readingID: UUID

    func toModel() -> Probe { Probe(uuid: uuid, reading: Reading(uuid: readingID, value: 0)) }
}

/// Concurrent single-row upserts gathered into one statement: each caller gets its own result or its own error,
/// and no caller's row is lost to another's failure or cancellation.
@Suite(.hangLimit) struct CoalescedWriteTests {
    /// Calls gather only while another write of their lane is under way, and here nothing but a finished write
    /// sends them: a window far longer than any test.
    private static func heldUntilWritten(_ configuration: inout PostgresService.Configuration) {
        configuration.coalescing = WriteCoalescing(window: .seconds(60))
    }

    private func lane(_ service: PostgresService, _ options: UpsertOptions = .upsert) -> CoalescingLane<Reading, UpsertResult> {
        service.runtime.coalescer.lane(Reading.self, options)
    }

    /// Waits for `condition`; 2 minutes, for a machine loaded by the other suites (against a server with 100
    /// connections, tests queue for them and run longer; see `hangLimit`).
    private func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        for _ in 0..<12_000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("waited 2 minutes in vain until \(what)")
    }

    /// Holds the row lock of `key` in a transaction on another connection until the returned closure is called,
    /// so that a write of that row waits, and with it the calls that gather behind it.
    private func lockRow(_ key: UUID, _ service: PostgresService) async throws -> @Sendable () async throws -> Void {
        try await lockRow(service, Self.locking(key))
    }

    private static func locking(_ key: UUID) -> @Sendable (PostgresTransaction) async throws -> [PostgresRow] {
        { try await $0.query("SELECT 1 FROM readings WHERE uuid = \(key) FOR UPDATE") }
    }

    private func lockRow(
        _ service: PostgresService, _ lock: @escaping @Sendable (PostgresTransaction) async throws -> [PostgresRow]
    ) async throws -> @Sendable () async throws -> Void {
        let (locked, lockedSignal) = AsyncStream.makeStream(of: Void.self)
        let (released, release) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await service.transaction { transaction in
                _ = try await lock(transaction)
                lockedSignal.yield()
                for await _ in released { break }
            }
        }
        for await _ in locked { break }
        return {
            release.yield()
            try await holder.value
        }
    }

    /// A write of the lane under way and held: a row stored, locked from another connection, and a call writing
    /// it; calls made meanwhile queue behind it. `release` lets that write end and returns its result.
    private struct HeldWrite<Model: StoredModel> {
        let lane: CoalescingLane<Model, UpsertResult>
        let release: @Sendable () async throws -> UpsertResult
    }

    private func holdWrite(_ service: PostgresService, _ options: UpsertOptions = .upsert) async throws -> HeldWrite<Reading> {
        let blocker = Reading(uuid: UUID(), value: 0)
        return try await holdWrite(
            service, stored: blocker, then: Reading(uuid: blocker.uuid, value: 1), options, lock: Self.locking(blocker.uuid))
    }

    /// `stored` written, its row locked by `lock`, then a call writing `then` (the same key) held behind the lock.
    private func holdWrite<Model: StoredModel>(
        _ service: PostgresService, stored: Model, then: Model, _ options: UpsertOptions = .upsert,
        lock: @escaping @Sendable (PostgresTransaction) async throws -> [PostgresRow]
    ) async throws -> HeldWrite<Model> {
        try await service.update(entities: [stored])
        let unlock = try await lockRow(service, lock)
        let lane = service.runtime.coalescer.lane(Model.self, options)
        let first = Task { try await service.update(entities: [then], options: options) }
        try await waitUntil("the first call writes") { lane.load.running == 1 }
        return HeldWrite(lane: lane) {
            try await unlock()
            return try await first.value
        }
    }

    /// Starts the calls one after another, each once the one before it waits in the lane: their arrival order.
    private func queue<Model: StoredModel>(
        _ readings: [Model], behind lane: CoalescingLane<Model, UpsertResult>, _ service: PostgresService,
        options: UpsertOptions = .upsert
    ) async throws -> [Task<UpsertResult, any Error>] {
        var calls: [Task<UpsertResult, any Error>] = []
        for reading in readings {
            let before = lane.load.waiting
            calls.append(Task { try await service.update(entities: [reading], options: options) })
            try await waitUntil("call \(calls.count) waits") { lane.load.waiting == before + 1 }
        }
        return calls
    }

    private func stored(_ service: PostgresService) async throws -> [UUID: Reading] {
        Dictionary(uniqueKeysWithValues: try await service.fetch(Reading.self).map { ($0.uuid, $0) })
    }

    private func isCoalesced(_ sql: String) -> Bool { sql.contains("structpg_row") }

    @Test func aThousandConcurrentCallersAreAllWrittenInFewStatementsEachWithItsOwnResult() async throws {
        try await withTables(Reading.create, pool: PoolOptions(maxConnections: 8), configure: { $0.coalescing = WriteCoalescing() }) {
            service, log in
            let existing = (0..<500).map { Reading(uuid: UUID(), value: $0) }
            try await service.update(entities: existing)
            log.reset()
            let changed = existing[..<250].map { Reading(uuid: $0.uuid, value: $0.value + 1_000, note: "changed") }
            let same = Array(existing[250...])
            let fresh = (0..<500).map { Reading(uuid: UUID(), value: $0, note: "new") }
            var expected: [UUID: UpsertResult] = [:]
            for reading in changed { expected[reading.uuid] = UpsertResult(updated: 1) }
            for reading in same { expected[reading.uuid] = UpsertResult(unchanged: 1) }
            for reading in fresh { expected[reading.uuid] = UpsertResult(inserted: 1) }

            let results = try await withThrowingTaskGroup(of: (UUID, UpsertResult).self) { group in
                for reading in (changed + same + fresh).shuffled() {
                    group.addTask { (reading.uuid, try await service.update(entities: [reading])) }
                }
                return try await group.reduce(into: [UUID: UpsertResult]()) { $0[$1.0] = $1.1 }
            }

            #expect(results == expected)
            let rows = try await stored(service)
            #expect(rows.count == 1_000)
            for reading in changed + same + fresh { #expect(rows[reading.uuid] == reading) }
            let writes = log.all.filter { $0.hasPrefix("INSERT") || isCoalesced($0) }
            print("1,000 concurrent single-row upserts took \(writes.count) statements")
            #expect(writes.count < 200)
            #expect(writes.contains(where: isCoalesced))
        }
    }

    @Test func onlyTheCallersWhoseRowsBreakACheckGetTheErrorAndEveryOtherRowIsWritten() async throws {
        try await withTables(Reading.create, pool: PoolOptions(maxConnections: 4), configure: Self.heldUntilWritten) { service, log in
            let held = try await holdWrite(service)
            let lane = held.lane
            let readings = (0..<20).map { Reading(uuid: UUID(), value: [3, 11, 12].contains($0) ? -$0 : $0) }
            let calls = try await queue(readings, behind: lane, service)
            log.reset()
            #expect(try await held.release() == UpsertResult(updated: 1))

            for (reading, call) in zip(readings, calls) {
                if reading.value < 0 {
                    let error = await #expect(throws: StructPostgresError.self) { try await call.value }
                    #expect(error?.code == .checkViolation)
                    #expect(error?.constraint == "value_not_negative")
                    #expect(error?.table == "readings")
                } else {
                    #expect(try await call.value == UpsertResult(inserted: 1))
                }
            }
            let rows = try await stored(service)
            #expect(rows.count == 18)
            for reading in readings { #expect(rows[reading.uuid] == (reading.value < 0 ? nil : reading)) }
            #expect(log.all.filter(isCoalesced).count > 1, "the batch failed and its halves were written again")
        }
    }

    @Test func anErrorThatIsNoRowsFaultReachesEveryCallerOfTheBatchWithoutSplittingIt() async throws {
        // A trigger refusing any statement of more than one row: the batch fails whichever rows it holds.
        let refuseBatches = """
            CREATE FUNCTION refuse_batches() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF (SELECT count(*) FROM new_rows) > 1 THEN RAISE EXCEPTION 'one row at a time' USING ERRCODE = 'P0001'; END IF;
                RETURN NULL;
            END $$;
            CREATE TRIGGER refuse_batches AFTER INSERT ON readings REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION refuse_batches();
            """
        try await withTables(Reading.create, refuseBatches, configure: Self.heldUntilWritten) { service, log in
            let held = try await holdWrite(service)
            let calls = try await queue((1...3).map { Reading(uuid: UUID(), value: $0) }, behind: held.lane, service)
            log.reset()
            _ = try await held.release()
            for call in calls {
                let error = await #expect(throws: StructPostgresError.self) { try await call.value }
                #expect(error?.sqlState == "P0001")
            }
            #expect(log.all.filter(isCoalesced).count == 1, "the batch was not split")
            #expect(try await rowCount("readings", service) == 1)
        }
    }

    @Test func callersWritingTheSameKeyAreAppliedInArrivalOrderEachWithTheResultItWouldHaveHadAlone() async throws {
        try await withTables(Reading.create, configure: Self.heldUntilWritten) { service, log in
            let held = try await holdWrite(service)
            let lane = held.lane
            let key = UUID()
            let other = Reading(uuid: UUID(), value: 9)
            let readings = [
                Reading(uuid: key, value: 1), other, Reading(uuid: key, value: 2), Reading(uuid: key, value: 2),
                Reading(uuid: key, value: 3, note: "last"),
            ]
            let calls = try await queue(readings, behind: lane, service)
            _ = try await held.release()

            var results: [UpsertResult] = []
            for call in calls { results.append(try await call.value) }
            #expect(
                results == [
                    UpsertResult(inserted: 1), UpsertResult(inserted: 1), UpsertResult(updated: 1), UpsertResult(unchanged: 1),
                    UpsertResult(updated: 1),
                ])
            let rows = try await stored(service)
            #expect(rows[key] == readings[4])
            #expect(rows[other.uuid] == other)
            #expect(log.all.contains("BEGIN"), "the repetitions of a key went in one transaction")
        }
    }

    @Test func eachCallerLearnsWhatHappenedToItsRowWhenTheColumnChangesTheKeyItWasGiven() async throws {
        // A Date into a `date` key: stored as the day, which the batch must still match to its caller.
        try await withTables(DailyTotal.create, configure: Self.heldUntilWritten) { service, _ in
            let noon = Date(timeIntervalSince1970: 1_790_000_000)
            let days = (0..<4).map { noon.addingTimeInterval(Double($0) * 86_400) }
            let held = try await holdWrite(service, stored: DailyTotal(day: days[0], total: 1), then: DailyTotal(day: days[0], total: 2)) {
                try await $0.query("SELECT 1 FROM daily_totals FOR UPDATE")
            }
            let calls = try await queue(days[1...].map { DailyTotal(day: $0, total: 3) }, behind: held.lane, service)
            #expect(try await held.release() == UpsertResult(updated: 1))
            for call in calls { #expect(try await call.value == UpsertResult(inserted: 1)) }
            #expect(try await rowCount("daily_totals", service) == 4)
        }
    }

    @Test func insertIfAbsentCallersLearnWhichOfThemWereSkipped() async throws {
        try await withTables(Reading.create, configure: Self.heldUntilWritten) { service, _ in
            let kept = Reading(uuid: UUID(), value: 5)
            try await service.update(entities: [kept])
            // An insert that would do nothing need not wait for a row lock (PostgreSQL 18 sometimes does not): the
            // write is held by a lock on the table, which every insert waits for.
            let blocker = Reading(uuid: UUID(), value: 0)
            let held = try await holdWrite(
                service, stored: blocker, then: Reading(uuid: blocker.uuid, value: 1), .insertIfAbsent.coalesced(),
                lock: { try await $0.query("LOCK TABLE readings IN EXCLUSIVE MODE") })
            let lane = held.lane
            let readings = [Reading(uuid: kept.uuid, value: 6), Reading(uuid: UUID(), value: 7)]
            let calls = try await queue(readings, behind: lane, service, options: .insertIfAbsent.coalesced())
            #expect(try await held.release() == UpsertResult(skipped: 1))
            #expect(try await calls[0].value == UpsertResult(skipped: 1))
            #expect(try await calls[1].value == UpsertResult(inserted: 1))
            #expect(try await stored(service)[kept.uuid] == kept)
        }
    }

    @Test func aCallerCancelledWhileWaitingLeavesTheBatchAndOneCancelledAfterItWasSentStillGetsItsRow() async throws {
        try await withTables(Reading.create, configure: Self.heldUntilWritten) { service, _ in
            let locked = Reading(uuid: UUID(), value: 0)
            try await service.update(entities: [locked])
            let held = try await holdWrite(service)
            let lane = held.lane
            let readings = [Reading(uuid: UUID(), value: 1), Reading(uuid: UUID(), value: 2), Reading(uuid: UUID(), value: 3)]
            let calls = try await queue(readings, behind: lane, service)

            // Cancelled while waiting: it leaves, and its row is never sent.
            calls[1].cancel()
            let error = await #expect(throws: StructPostgresError.self) { try await calls[1].value }
            #expect(error?.code == .queryCancelled)
            #expect(lane.load.waiting == 2)

            // The batch is sent once the first call is done, and waits for a second lock: its callers, even one
            // cancelled now, get its outcome.
            let releaseLocked = try await lockRow(locked.uuid, service)
            let late = Task { try await service.update(entities: [Reading(uuid: locked.uuid, value: 4)]) }
            try await waitUntil("the late call waits") { lane.load.waiting == 3 }
            _ = try await held.release()
            try await waitUntil("the batch is sent") { lane.load.waiting == 0 }
            calls[0].cancel()
            late.cancel()
            try await releaseLocked()
            #expect(try await calls[0].value == UpsertResult(inserted: 1))
            #expect(try await calls[2].value == UpsertResult(inserted: 1))
            #expect(try await late.value == UpsertResult(updated: 1))
            let rows = try await stored(service)
            #expect(rows[readings[0].uuid] == readings[0])
            #expect(rows[readings[1].uuid] == nil)
            #expect(rows[readings[2].uuid] == readings[2])
            #expect(rows[locked.uuid]?.value == 4)
        }
    }

    @Test func callsInTransactionsGraphWritesAndOptedOutCallsAreNeverGathered() async throws {
        try await withTables(Reading.create, Probe.create, configure: Self.heldUntilWritten) { service, log in
            let held = try await holdWrite(service)
            let lane = held.lane

            // While the lane is busy, these do not wait for it.
            let probe = Probe(uuid: UUID(), reading: Reading(uuid: UUID(), value: 6))
            #expect(try await service.update(entities: [probe]) == UpsertResult(inserted: 2))
            let optedOut = Reading(uuid: UUID(), value: 2)
            #expect(try await service.update(entities: [optedOut], options: .upsert.coalesced(false)) == UpsertResult(inserted: 1))
            let inTransaction = Reading(uuid: UUID(), value: 3)
            let result = try await service.transaction { try await $0.update(entities: [inTransaction]) }
            #expect(result == UpsertResult(inserted: 1))
            let two = [Reading(uuid: UUID(), value: 4), Reading(uuid: UUID(), value: 5)]
            #expect(try await service.update(entities: two) == UpsertResult(inserted: 2))
            #expect(lane.load.waiting == 0)
            #expect(lane.load.running == 1)

            _ = try await held.release()
            #expect(!log.all.contains(where: isCoalesced))
            #expect(try await rowCount("readings", service) == 6)
            #expect(try await rowCount("probes", service) == 1)
        }
    }

    @Test func aBadValueFoundBeforeSendingFailsOnlyItsOwnCaller() async throws {
        try await withTables(Reading.create, configure: Self.heldUntilWritten) { service, _ in
            let held = try await holdWrite(service)
            let lane = held.lane
            let readings = [
                Reading(uuid: UUID(), value: 1), Reading(uuid: UUID(), value: 2, note: "nul\u{0}byte"), Reading(uuid: UUID(), value: 3),
            ]
            let calls = try await queue(readings, behind: lane, service)
            _ = try await held.release()
            #expect(try await calls[0].value == UpsertResult(inserted: 1))
            let error = await #expect(throws: StructPostgresError.self) { try await calls[1].value }
            #expect(error?.code == .invalidValue)
            #expect(error?.column == "note")
            #expect(error?.rowKey == "uuid=\(readings[1].uuid.uuidString)")
            #expect(try await calls[2].value == UpsertResult(inserted: 1))
            #expect(try await rowCount("readings", service) == 3)
        }
    }
}
