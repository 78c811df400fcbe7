import Foundation
import StructPostgres
import Testing

/// Coalesced single-row writes of a model with a version: still one statement for the batch, and each caller gets
/// its own outcome: a stale caller its conflict, the others their writes.
@Suite(.hangLimit) struct VersionedCoalescingTests {
    private static func coalescing(_ configuration: inout PostgresService.Configuration) {
        configuration.coalescing = WriteCoalescing(window: .milliseconds(20))
    }

    @Test func aStaleCallerGetsItsConflictAndTheOthersTheirWrites() async throws {
        try await withTables(VersionedTally.create, pool: PoolOptions(maxConnections: 8), configure: Self.coalescing) { service, log in
            var rows = (0..<24).map { VersionedTally(uuid: UUID(), label: "t\($0)", value: $0) }
            try await service.update(entities: rows, options: .upsert.coalesced(false))
            rows = rows.map {
                var row = $0; row.version = 1; row.value += 100; return row
            }
            var stale = Set<Int>()
            for index in [3, 17] {
                rows[index].version = 0
                stale.insert(index)
            }
            log.reset()
            let outcomes = await withTaskGroup(of: (Int, Result<Int, any Error>).self) { group in
                for (index, row) in rows.enumerated() {
                    group.addTask {
                        (index, await outcome { try await service.update(entities: [row]).version(of: row) })
                    }
                }
                return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            for (index, outcome) in outcomes {
                switch outcome {
                case .success(let version): #expect(!stale.contains(index) && version == 2)
                case .failure(let error):
                    #expect(stale.contains(index))
                    #expect((error as? StructPostgresError)?.code == .versionConflict)
                    #expect((error as? StructPostgresError)?.conflicts.first?.storedVersion == 1)
                }
            }
            let stored = try await storedTallies(service)
            #expect(stored.values.filter { $0.version == 2 }.count == 22)
            #expect(stale.allSatisfy { stored[rows[$0].uuid]?.version == 1 && stored[rows[$0].uuid]?.value == $0 })
            let statements = log.all.count { $0.contains("structpg_locked") }
            print("24 coalesced versioned writes: \(statements) statements")
            #expect(statements < 24, "gathered into fewer statements than calls")
        }
    }

    /// Two callers with the same row at the same version: in one batch, rows with repeated keys go in rounds, in the
    /// order given, so (as one after the other) the first writes and the second meets the version the first stored.
    @Test func twoCallersOfOneRowAtOneVersionWinOnceWhenCoalesced() async throws {
        try await withTables(VersionedTally.create, configure: Self.coalescing) { service, _ in
            let stored = VersionedTally(uuid: UUID(), label: "a", value: 0)
            try await service.update(entities: [stored])
            var read = stored
            read.version = 1
            let row = read
            let results = await withTaskGroup(of: Result<UpsertResult, any Error>.self) { group in
                for value in 1...2 {
                    group.addTask {
                        var mine = row; mine.value = value; return await outcome { try await service.update(entities: [mine]) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let failures = results.compactMap { if case .failure(let error) = $0 { error as? StructPostgresError } else { nil } }
            #expect(failures.count == 1 && failures.first?.code == .versionConflict)
            #expect(try await storedTallies(service)[row.uuid]?.version == 2)
        }
    }

    /// Concurrent single-row deletes at a version are not gathered into one `DELETE ... RETURNING` (which would delete
    /// the stale callers' rows too): each is the conditional delete, alone, and each caller gets a lone call's outcome.
    @Test func singleRowDeletesAtAVersionAreConditionalEachAlone() async throws {
        try await withTables(VersionedTally.create, pool: PoolOptions(maxConnections: 8), configure: Self.coalescing) { service, log in
            var rows = (0..<24).map { VersionedTally(uuid: UUID(), label: "t\($0)", value: $0) }
            try await service.update(entities: rows, options: .upsert.coalesced(false))
            rows = rows.map {
                var row = $0; row.version = 1; return row
            }
            let stale: Set<Int> = [5, 11]
            for index in stale { rows[index].version = 0 }
            log.reset()
            let outcomes = await Self.deleteEach(rows, service, merging: nil)
            for (index, outcome) in outcomes {
                switch outcome {
                case .success(let deleted): #expect(!stale.contains(index) && deleted == 1, "\(index)")
                case .failure(let error):
                    #expect(stale.contains(index))
                    #expect((error as? StructPostgresError)?.code == .versionConflict)
                    #expect((error as? StructPostgresError)?.conflicts.first?.storedVersion == 1)
                }
            }
            #expect(Set(try await storedTallies(service).keys) == Set(stale.map { rows[$0].uuid }), "the stale callers' rows stay")
            #expect(log.all.count { $0.contains("structpg_locked") } == 24, "one conditional delete per call")
            #expect(!log.all.contains { $0.contains("structpg_place") }, "no unconditional batch delete")
        }
    }

    /// Under `overwrite` a delete is unconditional: the stale callers' rows go too, and the calls coalesce.
    @Test func singleRowDeletesUnderOverwriteCoalesce() async throws {
        try await withTables(VersionedTally.create, pool: PoolOptions(maxConnections: 8), configure: Self.coalescing) { service, log in
            let rows = (0..<24).map { VersionedTally(uuid: UUID(), label: "t\($0)", value: $0) }  // read at 0: all stale
            try await service.update(entities: rows, options: .upsert.coalesced(false))
            log.reset()
            let outcomes = await Self.deleteEach(rows, service, merging: .overwrite)
            #expect(outcomes.values.allSatisfy { (try? $0.get()) == 1 })
            #expect(try await storedTallies(service).isEmpty)
            let statements = log.all.count { $0.contains("DELETE") }
            print("24 coalesced overwriting deletes: \(statements) statements")
            #expect(statements < 24, "gathered into fewer statements than calls")
        }
    }

    /// Each row deleted by a task of its own, at once; what each returned or threw, by index.
    private static func deleteEach(
        _ rows: [VersionedTally], _ service: PostgresService, merging policy: MergePolicy?
    ) async -> [Int: Result<Int, any Error>] {
        await withTaskGroup(of: (Int, Result<Int, any Error>).self) { group in
            for (index, row) in rows.enumerated() {
                group.addTask {
                    (
                        index,
                        await outcome {
                            if let policy {
                                try await service.delete(entities: [row], merging: policy)
                            } else {
                                try await service.delete(entities: [row])
                            }
                        }
                    )
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    @Test func aCallCoalescedByItsOptionsKeepsItsPolicy() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            let row = VersionedTally(uuid: UUID(), label: "a", value: 0)
            try await service.update(entities: [row])
            let kept = try await service.update(entities: [row], options: .upsert.coalesced().merging(.rollback))
            #expect(kept.conflicts.count == 1)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [row], options: .upsert.coalesced())
            }
            #expect(error?.code == .versionConflict)
            let overwritten = try await service.update(entities: [row], options: .upsert.merging(.overwrite).coalesced())
            #expect(try overwritten.version(of: row) == 2)
        }
    }
}

/// What `body` returned or threw.
func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
