import Foundation
import StructPostgres
import Testing

/// A conflict changes nothing across the statements of one call (a graph, a batch written in slices), and inside a
/// transaction it leaves the transaction usable, as the other named errors do.
@Suite struct VersionedAtomicityTests {
    private func stored(_ service: PostgresService) async throws -> [String] {
        let rows = try await service.query(
            """
            SELECT name || ':' || version FROM bookcases UNION ALL SELECT text || ':' || version FROM bookcase_labels ORDER BY 1
            """)
        return try rows.map { try $0.decode(String.self) }
    }

    @Test func aConflictInAChildTableRollsBackTheParent() async throws {
        try await withTables(Bookcase.create[0], Bookcase.create[1]) { service, _ in
            var label = BookcaseLabel(uuid: UUID(), bookcaseID: UUID(), text: "label")
            var bookcase = Bookcase(uuid: label.bookcaseID, name: "case", labels: [label])
            try await service.update(entities: [bookcase])
            #expect(try await stored(service) == ["case:1", "label:1"])

            // Someone else renames the label.
            label.version = 1
            var theirs = label
            theirs.text = "theirs"
            try await service.update(entities: [theirs])

            bookcase.version = 1
            bookcase.name = "renamed"
            label.text = "mine"
            bookcase.labels = [label]  // at version 1, stored 2
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [bookcase]) }
            #expect(error?.code == .versionConflict)
            #expect(error?.conflicts.map(\.entity) == ["BookcaseLabel"])
            #expect(try await stored(service) == ["case:1", "theirs:2"], "the bookcase written first is rolled back")
        }
    }

    @Test func aConflictInATransactionLeavesItUsable() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var row = VersionedTally(uuid: UUID(), label: "a", value: 1)
            try await service.update(entities: [row])
            let other = VersionedTally(uuid: UUID(), label: "b", value: 2)
            let conflict = try await service.transaction { tx -> StructPostgresError? in
                var caught: StructPostgresError?
                do {
                    try await tx.update(entities: [row])  // version 0, stored 1
                } catch let error as StructPostgresError {
                    caught = error
                }
                row.version = 1
                row.value = 10
                try await tx.update(entities: [row, other])
                return caught
            }
            #expect(conflict?.code == .versionConflict)
            let tallies = try await storedTallies(service)
            #expect(tallies[row.uuid]?.value == 10 && tallies[row.uuid]?.version == 2)
            #expect(tallies[other.uuid]?.version == 1)
        }
    }

    @Test func aGraphInATransactionRollsBackToItsSavepointOnAConflict() async throws {
        try await withTables(Bookcase.create[0], Bookcase.create[1]) { service, _ in
            let label = BookcaseLabel(uuid: UUID(), bookcaseID: UUID(), text: "label")
            try await service.update(entities: [Bookcase(uuid: label.bookcaseID, name: "case", labels: [label])])
            let extra = Bookcase(uuid: UUID(), name: "extra")
            try await service.transaction { tx in
                try await tx.update(entities: [extra])
                let stale = Bookcase(uuid: label.bookcaseID, name: "renamed", version: 1, labels: [label])  // the label at 0
                await #expect(throws: StructPostgresError.self) { try await tx.update(entities: [stale]) }
                let names = try await tx.query("SELECT name FROM bookcases ORDER BY name").map { try $0.decode(String.self) }
                #expect(names == ["case", "extra"], "the failed graph left nothing, the transaction goes on")
            }
            #expect(try await stored(service) == ["case:1", "extra:1", "label:1"])
        }
    }

    /// Beyond 10,000 rows a call takes a statement per slice, in one transaction: the error lists the conflicts of
    /// every slice, and nothing is written.
    @Test(.hangLimit) func aBatchWrittenInSlicesListsTheConflictsOfEverySliceAndWritesNothing() async throws {
        try await withTables(VersionedTally.create) { service, _ in
            var rows = (0..<10_001).map { VersionedTally(uuid: UUID(), label: "t\($0)", value: $0) }
            try await service.update(entities: rows)
            for index in rows.indices { rows[index].version = 1 }
            var theirs = [rows[3], rows[10_000]]
            for index in theirs.indices { theirs[index].label = "theirs" }
            try await service.update(entities: theirs)
            for index in rows.indices { rows[index].value += 1 }
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: rows) }
            #expect(Set(error?.conflicts.map(\.rowKey) ?? []) == Set(theirs.map { "uuid=\($0.uuid.uuidString)" }))
            let counts = try await service.query(
                """
                SELECT count(*) FILTER (WHERE version = 1 AND value = substr(label, 2)::bigint),
                       count(*) FILTER (WHERE version = 2 AND label = 'theirs') FROM tallies
                """)
            let (untouched, theirsChanged) = try counts[0].decode((Int64, Int64).self)
            #expect(untouched == 9_999 && theirsChanged == 2, "only their two rows changed")
        }
    }
}
