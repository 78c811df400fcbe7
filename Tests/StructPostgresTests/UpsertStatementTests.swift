import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Tagged: StoredModel {
    static let table = "shop.tagged"
    var uuid: UUID
    var label: String?
    var tags: [String]
    var status: Status
    enum Status: String, Codable, Sendable { case open }
}

@Suite struct UpsertStatementTests {
    private func schema() -> TableSchema {
        TableSchema.fixture(
            "shop.tagged", quotedTable: "\"shop\".\"tagged\"",
            [
                ("uuid", "uuid", "uuid", "U"), ("label", "text", "text", "S"),
                ("tags", "text[]", "_text", "A"), ("status", "shop.status", "status", "E"),
            ])
    }

    @Test func oneStatementWithOneArrayParameterPerColumn() async throws {
        let description = try EntityDescription(Tagged.self, schema: schema())
        let rows = (0..<3).map { Tagged(uuid: UUID(), label: $0 == 1 ? nil : "l", tags: ["a"], status: .open) }
        let batch = rows
        let statement = try await prepared(batch, description, .upsert)
        #expect(statement.bindings.count == 4)
        #expect(
            statement.sql == """
                WITH upserted AS (INSERT INTO "shop"."tagged" AS t ("uuid", "label", "tags", "status") \
                SELECT u."uuid", u."label", u."tags"::text[], u."status"::shop.status \
                FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS u("uuid", "label", "tags", "status") \
                ORDER BY CAST(u."uuid" AS uuid) \
                ON CONFLICT ("uuid") DO UPDATE SET "label" = EXCLUDED."label", "tags" = EXCLUDED."tags", "status" = EXCLUDED."status" \
                WHERE (t."label", t."tags", t."status") IS DISTINCT FROM (EXCLUDED."label", EXCLUDED."tags", EXCLUDED."status") \
                RETURNING (t.xmax = 0) AS inserted) SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM upserted
                """)
    }

    @Test func aCoalescedBatchReportsEachRowByItsPlaceAndWritesInKeyOrder() async throws {
        let description = try EntityDescription(Tagged.self, schema: schema())
        let rows = (0..<2).map { _ in Tagged(uuid: UUID(), label: "l", tags: [], status: .open) }
        let statement = try await prepared(rows, description, .upsert, reportsRows: true)
        #expect(
            statement.sql == """
                WITH u AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY \
                AS u("uuid", "label", "tags", "status", structpg_row)), \
                w AS (INSERT INTO "shop"."tagged" AS t ("uuid", "label", "tags", "status") \
                SELECT u."uuid", u."label", u."tags"::text[], u."status"::shop.status FROM u ORDER BY CAST(u."uuid" AS uuid), u.structpg_row \
                ON CONFLICT ("uuid") DO UPDATE SET "label" = EXCLUDED."label", "tags" = EXCLUDED."tags", "status" = EXCLUDED."status" \
                WHERE (t."label", t."tags", t."status") IS DISTINCT FROM (EXCLUDED."label", EXCLUDED."tags", EXCLUDED."status") \
                RETURNING t.ctid AS structpg_ctid, t."uuid", (t.xmax = 0) AS structpg_inserted) \
                SELECT DISTINCT ON (w.structpg_ctid) u.structpg_row, w.structpg_inserted \
                FROM u JOIN w ON (w."uuid") = (CAST(u."uuid" AS uuid)) \
                ORDER BY w.structpg_ctid, u.structpg_row
                """)
        let single = try await prepared([rows[0]], description, .upsert, reportsRows: true)
        #expect(single.sql.hasPrefix("INSERT INTO"), "a single row's result says what happened to it")
    }

    @Test func insertIfAbsentAndChosenColumns() async throws {
        let description = try EntityDescription(Tagged.self, schema: schema())
        let batch = [Tagged(uuid: UUID(), label: nil, tags: [], status: .open)]
        let ignore = try await prepared(batch, description, .insertIfAbsent)
        #expect(ignore.sql.contains("ON CONFLICT (\"uuid\") DO NOTHING"))
        let chosen = try await prepared(batch, description, .updating("label"))
        #expect(
            chosen.sql.contains(
                "DO UPDATE SET \"label\" = EXCLUDED.\"label\" WHERE (t.\"label\") IS DISTINCT FROM (EXCLUDED.\"label\") RETURNING"))
        await #expect(throws: StructPostgresError.self) {
            try await prepared(batch, description, .updating("missing"))
        }
    }

    @Test func aConflictKeyWithoutAUniqueIndexIsRefused() async throws {
        struct ByLabel: StoredModel {
            static let table = "shop.tagged"
            static let uniqueKey = ["label"]
            var uuid: UUID
            var label: String?
        }
        let description = try EntityDescription(ByLabel.self, schema: schema())
        let batch = [ByLabel(uuid: UUID(), label: "x")]
        let error = await #expect(throws: StructPostgresError.self) {
            try await prepared(batch, description, .upsert)
        }
        #expect(error?.message.contains("no unique index or primary key on exactly those columns") == true)
    }
}

/// The upsert statement as the service prepares it.
private func prepared<E: EntityProtocol>(
    _ entities: [E], _ description: EntityDescription, _ options: UpsertOptions, reportsRows: Bool = false
) async throws -> Statement {
    try await PreparedUpsert(
        entities[...], description: description, options: options, cache: UpsertCache(catalog: CatalogCache()), inParallel: false,
        reportsRows: reportsRows
    ).statement
}
