import Foundation
import StructPostgres
import Testing

/// A delete of a model with a version applies only at the version it was read at.
@Suite struct VersionedDeleteTests {
    /// Three stored tallies at version 1, the second changed by someone else since (version 2).
    private func seeded(_ body: (PostgresService, [VersionedTally]) async throws -> Void) async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var rows = (0..<3).map { VersionedTally(uuid: UUID(), label: "t\($0)", value: $0) }
            try await service.update(entities: rows)
            rows = rows.map {
                var row = $0; row.version = 1; return row
            }
            var theirs = rows[1]
            theirs.value = 100
            try await service.update(entities: [theirs])
            try await body(service, rows)
        }
    }

    @Test func aDeleteAtTheStoredVersionsDeletes() async throws {
        try await seeded { (service: PostgresService, rows: [VersionedTally]) async throws in
            var current = rows
            current[1].version = 2
            #expect(try await service.delete(entities: current) == 3)
            #expect(try await rowCount("tallies", service) == 0)
        }
    }

    @Test func aStaleRowFailsTheWholeDeleteAndDeletesNothing() async throws {
        try await seeded { (service: PostgresService, rows: [VersionedTally]) async throws in
            let error = await #expect(throws: StructPostgresError.self) { try await service.delete(entities: rows) }
            #expect(error?.code == .versionConflict)
            #expect(
                error?.conflicts == [
                    VersionConflict(
                        entity: "VersionedTally", table: "tallies", rowKey: "uuid=\(rows[1].uuid.uuidString)", version: 1, storedVersion: 2)
                ])
            #expect(error?.message.contains("nothing was deleted") == true)
            #expect(try await rowCount("tallies", service) == 3)
        }
    }

    @Test func rollbackLeavesTheStaleRowsAndOverwriteDeletesThem() async throws {
        try await seeded { (service: PostgresService, rows: [VersionedTally]) async throws in
            #expect(try await service.delete(entities: rows, merging: .rollback) == 2)
            #expect(try await storedTallies(service).keys.sorted() == [rows[1].uuid])
            #expect(try await service.delete(entities: [rows[1]], merging: .overwrite) == 1)
            #expect(try await rowCount("tallies", service) == 0)
        }
    }

    @Test func theConfiguredPolicyAppliesToDeletes() async throws {
        try await withTables(VersionedTally.create, configure: { $0.mergePolicy = .overwrite }) { service, _ in
            let row = VersionedTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            #expect(try await service.delete(entities: [row]) == 1, "version 0, stored 1: overwritten")
        }
    }

    @Test func aRowAlreadyGoneIsNoConflictAndANewModelOverAStoredRowIs() async throws {
        try await seeded { (service: PostgresService, rows: [VersionedTally]) async throws in
            var gone = VersionedTally(uuid: UUID(), label: "gone", value: 0)
            gone.version = 3
            #expect(try await service.delete(entities: [gone]) == 0)
            let unread = VersionedTally(uuid: rows[0].uuid, label: "t0", value: 0)  // version 0: never read
            let error = await #expect(throws: StructPostgresError.self) { try await service.delete(entities: [unread]) }
            #expect(error?.conflicts.first?.storedVersion == 1)
            #expect(try await rowCount("tallies", service) == 3)
        }
    }

    @Test func aConflictingDeleteInATransactionLeavesItUsable() async throws {
        try await seeded { (service: PostgresService, rows: [VersionedTally]) async throws in
            try await service.transaction { (tx: PostgresTransaction) async throws in
                await #expect(throws: StructPostgresError.self) { try await tx.delete(entities: [rows[1]]) }
                #expect(try await tx.delete(entities: [rows[0]]) == 1)
            }
            #expect(try await rowCount("tallies", service) == 2)
        }
    }
}
