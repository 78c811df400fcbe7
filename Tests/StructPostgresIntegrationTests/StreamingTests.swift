import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

private struct Event: StoredModel {
    static let table = "events"
    let uuid: UUID
    var seq: Int64
    var payload: String
}

/// The process's peak resident memory (VmHWM) in MB, from /proc.
func peakMemoryMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes / 1024
}

@Suite struct StreamingTests {
    private let ddl = "CREATE TABLE events (uuid uuid PRIMARY KEY, seq int8 NOT NULL, payload text NOT NULL)"

    private func fill(_ rows: Int, _ service: PostgresService) async throws {
        try await service.execute(
            unsafeSQL: """
                INSERT INTO events SELECT gen_random_uuid(), g, repeat('x', 100) FROM generate_series(1, \(rows)) g
                """)
    }

    /// A stream takes a format string as the other verbs do; one that does not parse fails the first step.
    @Test func aFormatStringFiltersAStreamAndOneThatDoesNotParseFailsItsFirstStep() async throws {
        try await withTables(ddl) { service, _ in
            try await fill(10, service)
            var seqs: [Int64] = []
            for try await event in service.stream(Event.self, where: .format("seq > %@", 7), sortedBy: [.ascending("seq")]) {
                seqs.append(event.seq)
            }
            #expect(seqs == [8, 9, 10])
            let error = await #expect(throws: StructPostgresError.self) {
                for try await _ in service.stream(Event.self, where: .format("seq >")) {}
            }
            #expect(error?.message.contains("malformed predicate") == true, "\(error.map { "\($0)" } ?? "")")
        }
    }

    /// Every row, in order, decoded one at a time. `STRUCTPG_STREAM_ROWS` sets the count (1,000,000 for the
    /// memory figure of the closing note); the peak resident memory is printed.
    @Test func streamsEveryRowInOrder() async throws {
        let count = Int(ProcessInfo.processInfo.environment["STRUCTPG_STREAM_ROWS"] ?? "") ?? 50_000
        try await withTables(ddl) { service, _ in
            try await fill(count, service)
            let before = peakMemoryMB()
            let start = ContinuousClock.now
            var seen = 0
            var last: Int64 = 0
            var ordered = true
            for try await event in service.stream(Event.self, where: .format("seq > 0"), sortedBy: [.ascending("seq")]) {
                ordered = ordered && event.seq == last + 1 && event.payload.count == 100
                last = event.seq
                seen += 1
            }
            let elapsed = ContinuousClock.now - start
            #expect(seen == count)
            #expect(ordered)
            print("streamed \(seen) rows in \(elapsed); peak resident memory \(Int(before)) MB before, \(Int(peakMemoryMB())) MB after")
        }
    }

    @Test func leavingTheLoopEarlyGivesTheConnectionBack() async throws {
        try await withTables(ddl, pool: PoolOptions(maxConnections: 1, acquireTimeout: .seconds(20))) { service, _ in
            try await fill(10_000, service)
            var taken = 0
            for try await _ in service.stream(Event.self) {
                taken += 1
                if taken == 10 { break }
            }
            #expect(taken == 10)
            let left = ContinuousClock.now
            let total = try await service.count(Event.self)
            print("the stream's connection served the next call \(ContinuousClock.now - left) after the loop was left")
            #expect(total == 10_000)
            #expect(service.connectionsInUse == 0)
        }
    }

    /// In a child process (`StructPostgresFaultProbe`), so that a crash fails this test instead of the run:
    /// the stream's backend is terminated after the first thousand rows, and the loop must end with
    /// `connectionLost`. (Through PostgresNIO's row sequence, the process died with SIGILL.)
    @Test func aLostConnectionEndsTheLoopWithConnectionLostInsteadOfACrash() async throws {
        let database = try await TestDatabase.create()
        do {
            let configuration = PostgresService.Configuration(connection: database.settings, pool: PoolOptions(maxConnections: 1))
            try await PostgresService.withService(configuration: configuration) { service in
                try await service.execute(unsafeSQL: ddl)
                try await fill(200_000, service)
            }
            for _ in 1...3 {
                let result = try await CLI.run(
                    ["stream-lost-connection"], environment: ["DATABASE_URL": database.url],
                    binary: CLI.product("StructPostgresFaultProbe"))
                #expect(result.status == 0, "exit \(result.status): \(result.output.prefix(300)) \(result.errors.prefix(300))")
                #expect(result.output.contains("outcome: connectionLost after"), "\(result.output.prefix(300))")
            }
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }

    /// Canary of the PostgresNIO defect that `withConnection`'s documentation warns of: a connection lost while
    /// rows are read through PostgresNIO's own row sequence (as a raw connection reads them) traps the process
    /// (`RowStreamStateMachine`, PostgresNIO 1.33.2). Run in a child process. When this test fails, PostgresNIO no
    /// longer traps: the warning, and the library's own way of reading streams (`CursorReader`), can be revisited.
    /// Always against the server itself (a pooler in between answers a terminated backend otherwise).
    @Test func aRawConnectionsRowSequenceStillTrapsWhenItsConnectionIsLost() async throws {
        let database = try await TestDatabase.create()
        do {
            let configuration = PostgresService.Configuration(connection: database.settings, pool: PoolOptions(maxConnections: 1))
            try await PostgresService.withService(configuration: configuration) { service in
                try await service.execute(unsafeSQL: ddl)
                try await fill(50_000, service)
            }
            var outcomes: [String] = []
            for _ in 1...2 {
                let result = try await CLI.run(
                    ["driver-row-sequence"], environment: ["DATABASE_URL": database.directURL, "SWIFT_BACKTRACE": "enable=no"],
                    binary: CLI.product("StructPostgresFaultProbe"))
                outcomes.append(
                    result.output.contains("outcome:")
                        ? String(result.output.prefix(120))
                        : result.signalled ? "crashed (signal \(result.status))" : "failed (\(result.status)): \(result.errors.suffix(200))"
                )
            }
            #expect(outcomes.contains { $0.hasPrefix("crashed") }, "PostgresNIO no longer traps: \(outcomes)")
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }

    /// A loop left early gives the stream's connection back as it ends, not once the batch on its way has arrived:
    /// here rows come slowly (a view that sleeps a millisecond per row), so the second batch (8,192 rows) would hold
    /// the connection for about 8 s. The bound leaves room for a loaded machine.
    @Test func aStreamLeftEarlyGivesItsConnectionBackAsTheLoopEnds() async throws {
        let slowView = """
            ALTER TABLE events RENAME TO events_stored;
            CREATE VIEW events AS SELECT uuid, seq, payload || left(pg_sleep(0.001)::text, 0) AS payload FROM events_stored
            """
        try await withTables(ddl, pool: PoolOptions(maxConnections: 1)) { service, _ in
            try await fill(20_000, service)
            try await service.execute(unsafeSQL: slowView)
            for take in [1, 200] {
                var seen = 0
                for try await _ in service.stream(Event.self) {
                    seen += 1
                    if seen == take { break }
                }
                let ended = ContinuousClock.now
                while service.connectionsInUse > 0, ContinuousClock.now - ended < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(1))
                }
                let waited = ContinuousClock.now - ended
                #expect(waited < .seconds(2.5), "left after \(take) rows: the connection came back after \(waited)")
                // The next call gets the only connection.
                #expect(try await service.count(Event.self, where: .format("seq <= 10")) == 10)
            }
        }
    }

    @Test func aBadFilterFailsTheFirstIteration() async throws {
        try await withTables(ddl) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                for try await _ in service.stream(Event.self, where: .equal("sequence", 1)) {}
            }
            #expect(error?.code == .undefinedColumn)
            #expect(service.connectionsInUse == 0)
        }
    }
}
