import Foundation
import StructPostgres
import Testing

private struct OptionalVersion: StoredModel {
    static let table = "tallies"
    static let versionKey: String? = "version"
    var uuid: UUID
    var label: String
    var value: Int
    var version: Int?
}

private struct UnknownVersion: StoredModel {
    static let table = "tallies"
    static let versionKey: String? = "revision"
    var uuid: UUID
    var label: String
    var value: Int
}

private struct KeyAsVersion: StoredModel {
    static let table = "tallies"
    static let versionKey: String? = "uuid"
    var uuid: UUID
    var label: String
    var value: Int
}

/// A model with a version given something the version cannot be: each is refused by name before anything is sent,
/// and the table keeps what it held.
@Suite struct VersionedBadInputTests {
    private func seeded(_ ddl: String = VersionedTally.create, _ body: (PostgresService, StatementLog, VersionedTally) async throws -> Void)
        async throws
    {
        try await withTables(ddl) { service, log in
            let row = VersionedTally(uuid: UUID(), label: "kept", value: 1)
            try await service.execute(unsafeSQL: "INSERT INTO tallies (uuid, label, value) VALUES ('\(row.uuid)', 'kept', 1)")
            log.reset()
            try await body(service, log, row)
        }
    }

    private func expectUnchanged(_ service: PostgresService, _ row: VersionedTally) async throws {
        let rows = try await service.query("SELECT label, value FROM tallies")
        #expect(rows.count == 1)
        let (label, value) = try rows[0].decode((String, Int64).self)
        #expect(label == "kept" && value == 1)
    }

    @Test func aNegativeVersionIsRefused() async throws {
        try await seeded { service, log, row in
            var bad = row
            bad.version = -1
            bad.label = "changed"
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [bad, VersionedTally(uuid: UUID(), label: "x", value: 2)])
            }
            #expect(error?.code == .invalidValue)
            #expect(error?.property == "version" && error?.rowKey == "uuid=\(row.uuid.uuidString)")
            let deleted = await #expect(throws: StructPostgresError.self) { try await service.delete(entities: [bad]) }
            #expect(deleted?.code == .invalidValue)
            #expect(log.all.allSatisfy { !$0.contains("INSERT") && !$0.contains("DELETE") }, "nothing sent")
            try await expectUnchanged(service, row)
        }
    }

    @Test func aNilVersionIsRefused() async throws {
        try await seeded { service, _, row in
            let bad = OptionalVersion(uuid: row.uuid, label: "changed", value: 5, version: nil)
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [bad]) }
            #expect(error?.code == .invalidValue)
            #expect(error?.message.contains("nil") == true)
            try await expectUnchanged(service, row)
        }
    }

    @Test func aVersionColumnThatIsNullableOrNotAWholeNumberIsRefused() async throws {
        let nullable = "CREATE TABLE tallies (uuid uuid PRIMARY KEY, label text NOT NULL, value bigint NOT NULL, version integer)"
        try await seeded(nullable) { service, _, row in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [VersionedTally(uuid: row.uuid, label: "changed", value: 2)])
            }
            #expect(error?.code == .invalidConfiguration && error?.column == "version")
            #expect(error?.message.contains("integer NOT NULL DEFAULT 1") == true)
            try await expectUnchanged(service, row)
        }
        let numeric =
            "CREATE TABLE tallies (uuid uuid PRIMARY KEY, label text NOT NULL, value bigint NOT NULL, version numeric NOT NULL DEFAULT 1)"
        try await seeded(numeric) { service, _, row in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [VersionedTally(uuid: row.uuid, label: "changed", value: 2)])
            }
            #expect(error?.code == .invalidConfiguration)
            try await expectUnchanged(service, row)
        }
    }

    @Test func aVersionKeyThatNamesNoColumnOrAKeyColumnIsRefused() async throws {
        try await seeded { service, _, row in
            let unknown = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [UnknownVersion(uuid: row.uuid, label: "changed", value: 2)])
            }
            #expect(unknown?.code == .undefinedColumn && unknown?.property == "revision")
            let key = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [KeyAsVersion(uuid: row.uuid, label: "changed", value: 2)])
            }
            #expect(key?.code == .invalidConfiguration)
            #expect(key?.message.contains("uniqueKey") == true)
            try await expectUnchanged(service, row)
        }
    }
}
