import Foundation
import StructPostgres
import Testing

/// Writes of a model with a version: an insert stores 1, an update applies only at the stored version and stores one
/// more, and each merge policy does what Core Data's does with the rows that changed since they were read.
@Suite struct VersionedWriteTests {
    private func tallies(_ count: Int) -> [VersionedTally] {
        (0..<count).map { VersionedTally(uuid: UUID(), label: "t\($0)", value: $0) }
    }

    @Test func anInsertStoresOneAndEachUpdateOneMoreLearntFromTheWriteItself() async throws {
        try await withTables(VersionedTally.create) { service, log in
            var tally = VersionedTally(uuid: UUID(), label: "a", value: 1)
            let inserted = try await service.update(entities: [tally])
            #expect(inserted.inserted == 1)
            tally.version = try inserted.version(of: tally)
            #expect(tally.version == 1)

            tally.value = 2
            let updated = try await service.update(entities: [tally])
            #expect(updated.updated == 1)
            tally.version = try updated.version(of: tally)
            #expect(tally.version == 2)

            log.reset()
            let again = try await service.update(entities: [tally])
            #expect(again.unchanged == 1, "the same values again: not rewritten")
            #expect(try again.version(of: tally) == 2)
            #expect(log.all.count == 1, "one statement per write, no read for the version")
            #expect(try await service.find(VersionedTally.self, id: tally.uuid) == tally)
            #expect(try await storedTallies(service)[tally.uuid]?.version == 2)
        }
    }

    @Test func aBatchWithOneStaleRowFailsWholeListingItAndWritesNothing() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var rows = tallies(3)
            let first = try await service.update(entities: rows)
            for index in rows.indices { rows[index].version = try first.version(of: rows[index]) }
            // Someone else changes row 1.
            var theirs = rows[1]
            theirs.value = 100
            try await service.update(entities: [theirs])

            let before = try await storedTallies(service)
            var mine = rows
            for index in mine.indices { mine[index].value += 424_242 }
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: mine) }
            #expect(error?.code == .versionConflict)
            #expect(
                error?.conflicts == [
                    VersionConflict(
                        entity: "VersionedTally", table: "tallies", rowKey: "uuid=\(rows[1].uuid.uuidString)", version: 1, storedVersion: 2)
                ])
            #expect(error?.rowKey == "uuid=\(rows[1].uuid.uuidString)")
            let description = error.map { "\($0)" } ?? ""
            #expect(description.contains("yours 1, stored 2"))
            // The row keys' UUIDs are random hex, which may hold any digits: they are left out of the search.
            let scrubbed = rows.reduce(description) { $0.replacingOccurrences(of: $1.uuid.uuidString, with: "<key>") }
            #expect(!scrubbed.contains("42424") && !scrubbed.contains("t1"), "keys and versions only, never values: \(description)")
            let after = try await storedTallies(service)
            #expect(after.mapValues { "\($0)" } == before.mapValues { "\($0)" }, "nothing written, not even the fresh rows")
        }
    }

    @Test func aNewModelWhoseKeyIsStoredAndAModelWhoseRowWasDeletedConflict() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            let stored = VersionedTally(uuid: UUID(), label: "stored", value: 1)
            try await service.update(entities: [stored])
            let twin = VersionedTally(uuid: stored.uuid, label: "twin", value: 2)  // version 0: never stored, as far as it knows
            var gone = VersionedTally(uuid: UUID(), label: "gone", value: 3)
            gone.version = 4  // read once, deleted since
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [twin, gone]) }
            #expect(error?.conflicts.map(\.version) == [0, 4])
            #expect(error?.conflicts.map(\.storedVersion) == [1, nil])
            #expect(error?.conflicts.last?.description.hasSuffix("(yours 4, stored none)") == true)
            #expect(try await rowCount("tallies", service) == 1, "the deleted row is not brought back")
            #expect(try await service.find(VersionedTally.self, id: stored.uuid)?.label == "stored")
        }
    }

    @Test func rollbackKeepsWhatIsStoredAndReportsTheConflictsInTheResult() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var rows = tallies(2)
            try await service.update(entities: rows)
            rows = rows.map {
                var row = $0; row.version = 1; return row
            }
            var theirs = rows[0]
            theirs.label = "theirs"
            try await service.update(entities: [theirs])

            var mine = rows
            mine[0].label = "mine"
            mine[1].label = "mine too"
            let result = try await service.update(entities: mine, options: .upsert.merging(.rollback))
            #expect(result.updated == 1)
            #expect(result.conflicts.map(\.rowKey) == ["uuid=\(rows[0].uuid.uuidString)"])
            #expect(result.conflicts.first?.storedVersion == 2)
            #expect(try result.version(of: mine[1]) == 2)
            let skipped = #expect(throws: StructPostgresError.self) { try result.version(of: mine[0]) }
            #expect(skipped?.code == .versionConflict)
            #expect(try await service.find(VersionedTally.self, id: rows[0].uuid)?.label == "theirs")
            #expect(try await service.find(VersionedTally.self, id: rows[1].uuid)?.label == "mine too")
        }
    }

    @Test func overwriteWritesAnywayAndBumpsTheStoredVersion() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var row = VersionedTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            row.version = 1
            var second = row
            second.value = 5
            try await service.update(entities: [second])  // version 2
            var stale = row  // still at version 1
            stale.label = "overwritten"
            var gone = VersionedTally(uuid: UUID(), label: "new", value: 0)
            gone.version = 7
            let result = try await service.update(entities: [stale, gone], options: .upsert.merging(.overwrite))
            #expect(result.updated == 1 && result.inserted == 1 && result.conflicts.isEmpty)
            #expect(try result.version(of: stale) == 3)
            #expect(try result.version(of: gone) == 1, "an insert stores 1")
            let stored = try await storedTallies(service)
            #expect(stored[row.uuid]?.version == 3 && stored[gone.uuid]?.version == 1)
        }
    }

    @Test func theConfiguredPolicyAppliesWhereACallNamesNone() async throws {
        try await withTables(VersionedTally.create, configure: { $0.mergePolicy = .rollback }) { service, _ in
            let row = VersionedTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            let result = try await service.update(entities: [row])  // version 0 again: a conflict, kept as stored
            #expect(result.conflicts.count == 1 && result.inserted == 0)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [row], options: .upsert.merging(.error))
            }
            #expect(error?.code == .versionConflict)
        }
    }

    @Test func insertIfAbsentInsertsAtOneAndLeavesStoredRowsWhateverTheirVersion() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            let stored = VersionedTally(uuid: UUID(), label: "stored", value: 1)
            try await service.update(entities: [stored])
            var changed = stored
            changed.label = "changed"
            let fresh = VersionedTally(uuid: UUID(), label: "fresh", value: 2)
            let result = try await service.update(entities: [changed, fresh], options: .insertIfAbsent)
            #expect(result.inserted == 1 && result.skipped == 1 && result.conflicts.isEmpty)
            #expect(try result.version(of: fresh) == 1)
            #expect(try await service.find(VersionedTally.self, id: stored.uuid)?.label == "stored")
        }
    }

    @Test func updatingChosenPropertiesBumpsTheVersionAndMayNotNameIt() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var row = VersionedTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            row.version = 1
            row.label = "b"
            row.value = 2
            let result = try await service.update(entities: [row], options: .updating("value"))
            #expect(try result.version(of: row) == 2)
            let stored = try await service.find(VersionedTally.self, id: row.uuid)
            #expect(stored?.label == "a" && stored?.value == 2)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [row], options: .updating("value", "version"))
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(try await storedTallies(service)[row.uuid]?.version == 2, "unchanged")
        }
    }

    @Test func aBatchWithARepeatedKeyIsWrittenOnceAtTheVersionOfItsLastCopy() async throws {
        try await withTables(VersionedTally.create) { service, log in
            var row = VersionedTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            row.version = 1
            var first = row
            first.label = "first"
            var last = row
            last.label = "last"
            log.reset()
            let result = try await service.update(entities: [first, tallies(1)[0], last])
            #expect(result.merged == 1 && result.updated == 1 && result.inserted == 1)
            #expect(try result.version(of: last) == 2)
            #expect(log.all.count == 1)
            #expect(try await service.find(VersionedTally.self, id: row.uuid)?.label == "last")
        }
    }

    @Test func modelsWithoutAVersionAreWrittenAsBefore() async throws {
        try await withTables(PlainTally.create) { service, log in
            let row = PlainTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            try await service.update(entities: [row, PlainTally(uuid: UUID(), label: "b", value: 2)])
            #expect(log.all.allSatisfy { !$0.contains("structpg_locked") && !$0.contains("version") })
            let result = try await service.update(entities: [row], options: .upsert.merging(.error))
            #expect(result == UpsertResult(unchanged: 1), "no conflict without a version, whatever the policy")
            let error = #expect(throws: StructPostgresError.self) { try result.version(of: row) }
            #expect(error?.code == .invalidValue)
        }
    }
}
