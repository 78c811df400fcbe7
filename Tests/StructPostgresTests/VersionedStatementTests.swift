import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Note: StoredModel {
    static let table = "notes"
    static let versionKey: String? = "version"
    var uuid: UUID
    var text: String
    var version: Int
}

/// The statements of a model with a version, as the service prepares them (no server): one per batch, whatever the
/// merge policy. Those of models without one are pinned, unchanged, by ``UpsertStatementTests``.
@Suite struct VersionedStatementTests {
    private func description(versionNotNull: Bool = true, versionType: (String, String) = ("integer", "int4")) throws -> EntityDescription {
        var version = TableSchema.Column(
            name: "version", typeName: versionType.0, baseName: versionType.1, category: "N", maxLength: nil, numericPrecision: nil,
            castName: versionType.0)
        version.notNull = versionNotNull
        version.hasDefault = true
        let columns = [
            TableSchema.Column(
                name: "uuid", typeName: "uuid", baseName: "uuid", category: "U", maxLength: nil, numericPrecision: nil, castName: "uuid"),
            TableSchema.Column(
                name: "text", typeName: "text", baseName: "text", category: "S", maxLength: nil, numericPrecision: nil, castName: "text"),
            version,
        ]
        let schema = TableSchema(
            table: "notes", quotedTable: "\"notes\"", columns: Dictionary(uniqueKeysWithValues: columns.map { ($0.name, $0) }),
            columnOrder: columns.map(\.name), uniqueKeys: [.init(columns: ["uuid"], nullsNotDistinct: false)])
        return try EntityDescription(Note.self, schema: schema)
    }

    private func statement(_ notes: [Note], _ options: UpsertOptions, _ description: EntityDescription? = nil) async throws -> Statement {
        try await PreparedUpsert(
            notes[...], description: description ?? self.description(), options: options, cache: UpsertCache(catalog: CatalogCache()),
            inParallel: false
        ).statement
    }

    private func notes(_ count: Int, version: Int = 1) -> [Note] {
        (0..<count).map { Note(uuid: UUID(), text: "n\($0)", version: version) }
    }

    @Test func theErrorPolicyLocksReadsAndWritesInOneStatementOnlyWithoutAConflict() async throws {
        let sql = try await statement(notes(2), .upsert.merging(.error)).sql
        #expect(
            sql == """
                WITH u AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::int8[]) WITH ORDINALITY AS u("uuid", "text", "version", structpg_row)), \
                structpg_locked AS (SELECT u.structpg_row, t."version" AS structpg_stored FROM u JOIN "notes" AS t \
                ON (t."uuid") = (CAST(u."uuid" AS uuid)) ORDER BY t."uuid" FOR NO KEY UPDATE OF t), \
                structpg_conflicts AS (SELECT u.structpg_row, l.structpg_stored FROM u LEFT JOIN structpg_locked AS l USING (structpg_row) \
                WHERE l.structpg_stored IS DISTINCT FROM nullif(u."version", 0)), \
                w AS (INSERT INTO "notes" AS t ("uuid", "text", "version") \
                SELECT u."uuid", u."text", u."version" + 1 FROM u WHERE NOT EXISTS (SELECT FROM structpg_conflicts) \
                ORDER BY CAST(u."uuid" AS uuid), u.structpg_row \
                ON CONFLICT ("uuid") DO UPDATE SET "text" = EXCLUDED."text", "version" = CASE WHEN t."version" = EXCLUDED."version" - 1 THEN EXCLUDED."version" END \
                WHERE t."version" IS DISTINCT FROM EXCLUDED."version" - 1 OR (t."text") IS DISTINCT FROM (EXCLUDED."text") \
                RETURNING t."uuid", (t.xmax = 0) AS structpg_inserted, t."version" AS structpg_version) \
                SELECT u.structpg_row, w.structpg_inserted, w.structpg_version::int8, NULL::int8 FROM u JOIN w ON (w."uuid") = (CAST(u."uuid" AS uuid)) \
                UNION ALL SELECT c.structpg_row, NULL, NULL, c.structpg_stored::int8 FROM structpg_conflicts AS c
                """)
    }

    @Test func rollbackLeavesOutOnlyTheConflictsAndASingleRowTakesScalarParameters() async throws {
        let rollback = try await statement(notes(2), .upsert.merging(.rollback)).sql
        #expect(rollback.contains("FROM u WHERE u.structpg_row NOT IN (SELECT structpg_row FROM structpg_conflicts) ORDER BY"))
        let single = try await statement(notes(1), .upsert.merging(.error))
        #expect(
            single.sql.hasPrefix(
                #"WITH u AS (SELECT $1 AS "uuid", $2 AS "text", $3 AS "version", 1::int8 AS structpg_row), structpg_locked AS"#))
        #expect(single.bindings.count == 3)
    }

    @Test func overwriteAndInsertIfAbsentStoreOneOnInsertWithoutLocking() async throws {
        let overwrite = try await statement(notes(2), .upsert.merging(.overwrite)).sql
        #expect(!overwrite.contains("structpg_locked"))
        #expect(overwrite.contains(#"SELECT u."uuid", u."text", 1 FROM u"#))
        #expect(overwrite.contains(#"DO UPDATE SET "text" = EXCLUDED."text", "version" = t."version" + 1 RETURNING"#))
        let ignore = try await statement(notes(2), .insertIfAbsent.merging(.error)).sql
        #expect(ignore.contains(#"ON CONFLICT ("uuid") DO NOTHING RETURNING"#))
        #expect(ignore.contains(#"SELECT u."uuid", u."text", 1 FROM u"#))
    }

    @Test func eachPolicyIsAStatementOfItsOwnInTheCache() async throws {
        let cache = UpsertCache(catalog: CatalogCache())
        let description = try description()
        var texts: Set<String> = []
        for policy in [MergePolicy.error, .rollback, .overwrite] {
            texts.insert(
                try await PreparedUpsert(
                    notes(2)[...], description: description, options: .upsert.merging(policy), cache: cache, inParallel: false
                ).statement.sql)
        }
        #expect(texts.count == 3)
    }

    @Test func aVersionColumnThatIsNullableOrNotAWholeNumberAndABadVersionAreRefused() async throws {
        let nullable = await #expect(throws: StructPostgresError.self) {
            try await statement(notes(2), .upsert, try description(versionNotNull: false))
        }
        #expect(nullable?.code == .invalidConfiguration && nullable?.column == "version")
        let negative = await #expect(throws: StructPostgresError.self) { try await statement(notes(1, version: -2), .upsert) }
        #expect(negative?.code == .invalidValue && negative?.property == "version")
        #expect(negative?.rowKey?.hasPrefix("uuid=") == true)
    }

    @Test func mergePolicyNamesAndOptions() {
        #expect([MergePolicy.error, .rollback, .overwrite].map(\.description) == ["error", "rollback", "overwrite"])
        #expect(UpsertOptions.upsert.merging(.rollback).coalesced() == UpsertOptions.upsert.coalesced().merging(.rollback))
        #expect(UpsertOptions.upsert.resolvingMergePolicy(.overwrite) == .upsert.merging(.overwrite))
        #expect(UpsertOptions.upsert.merging(.error).resolvingMergePolicy(.overwrite) == .upsert.merging(.error))
    }

    @Test func aConflictErrorListsEveryRowByKeyAndNeverAValue() {
        let conflicts = (0..<12).map {
            VersionConflict(entity: "Note", table: "notes", rowKey: "uuid=\($0)", version: $0, storedVersion: $0 == 0 ? nil : $0 + 1)
        }
        let error = StructPostgresError.versionConflict(conflicts)
        #expect(error.code == .versionConflict && error.conflicts.count == 12)
        #expect(
            error.description.hasPrefix(
                "versionConflict: 12 rows of Note changed since they were read: uuid=0 (yours 0, stored none), uuid=1 (yours 1, stored 2),")
        )
        #expect(error.description.contains("uuid=9 (yours 9, stored 10) and 2 more; nothing was written"))
        #expect(StructPostgresError.versionConflict([conflicts[1]]).rowKey == "uuid=1")
    }

    @Test func theResultTellsEachModelsVersionByItsKey() throws {
        let notes = notes(40)
        let keys = [notes.map { ColumnValue.uuid($0.uuid) }]
        var outcomes = notes.indices.map { WrittenVersions.Outcome.version($0) }
        let conflict = VersionConflict(entity: "Note", table: "notes", rowKey: "uuid=x", version: 1, storedVersion: 5)
        outcomes[7] = .conflict(conflict)
        var result = UpsertResult(updated: 39)
        result.versions = WrittenVersions([.init(entity: ObjectIdentifier(Note.self), keyColumns: ["uuid"], keys: keys, outcomes: outcomes)]
        )
        #expect(try result.version(of: notes[30]) == 30)
        let skipped = #expect(throws: StructPostgresError.self) { try result.version(of: notes[7]) }
        #expect(skipped?.conflicts == [conflict])
        let unknown = #expect(throws: StructPostgresError.self) { try result.version(of: Note(uuid: UUID(), text: "", version: 0)) }
        #expect(unknown?.code == .invalidValue)
        let later = WrittenVersions([
            .init(entity: ObjectIdentifier(Note.self), keyColumns: ["uuid"], keys: [[keys[0][30]]], outcomes: [.version(99)])
        ])
        result.versions = result.versions + later
        #expect(try result.version(of: notes[30]) == 99, "the last statement that wrote a key tells")
    }
}
