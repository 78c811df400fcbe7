import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// A model that disagrees with its table in every way one can: each property or column below is one mismatch.
private struct Gadget: StoredModel {
    static let table = "gadgets"
    var uuid: UUID
    var name: String  // nullable column: a NULL would not read back
    var nickname: String?  // NOT NULL column: nil would not write
    var weight: Int  // text column: an Int is refused by the write path
    var colour: String  // no column at all
    var madeAt: Date  // agrees
}

/// A to-one relationship through a column without a foreign key constraint.
private struct Part: StoredModel {
    static let table = "parts"
    static let relationships: [Relationship<Self>] = [.toOne("gadget", \.$gadget, column: "gadgetID")]
    var uuid: UUID
    var gadgetID: UUID?
    @Related var gadget: Gadget?
}

/// A model whose table was never created.
private struct Phantom: StoredModel {
    static let table = "phantoms"
    var uuid: UUID
}

private let ddl = [
    """
    CREATE TABLE gadgets (uuid uuid NOT NULL, name text, nickname text NOT NULL, weight text NOT NULL,
                          made_at timestamptz NOT NULL, serial text NOT NULL, created timestamptz NOT NULL DEFAULT now(),
                          note text)
    """,
    "CREATE TABLE parts (uuid uuid PRIMARY KEY, gadget_id uuid)",
]

/// The models against the catalog: every mismatch named, all in one call.
@Suite struct SchemaVerificationTests {
    @Test func theBookStoresModelsMatchTheMigratedSchema() async throws {
        try await withBookstore { service, _ in
            let report = try await service.schemaReport(for: BookstoreSchema.models)
            #expect(report.matches, "\(report)")
            try await service.verifySchema(of: [BookModel.self])
        }
    }

    static let expected: [(SchemaMismatch.Kind, entity: String, property: String?, column: String?, says: String)] = [
        (.missingTable, "Phantom", nil, nil, "table 'phantoms' does not exist"),
        (.missingColumn, "Gadget", "colour", "colour", "which table 'gadgets' does not have"),
        (.typeMismatch, "Gadget", "weight", "weight", "weight"),
        (.optionalOnNotNullColumn, "Gadget", "nickname", "nickname", "writing nil fails"),
        (.nonOptionalOnNullableColumn, "Gadget", "name", "name", "reading a row where it is NULL fails"),
        (.uniqueKeyWithoutIndex, "Gadget", nil, "uuid", "ON CONFLICT needs one"),
        (.missingForeignKey, "Part", "gadget", "gadget_id", "no foreign key constraint to 'gadgets'"),
        (.unwrittenRequiredColumn, "Gadget", nil, "serial", "every insert fails"),
    ]

    @Test(arguments: SchemaVerificationTests.expected.indices)
    func eachMismatchIsFoundAndNamed(_ index: Int) async throws {
        let (kind, entity, property, column, says) = Self.expected[index]
        try await withTables(ddl[0], ddl[1]) { service, _ in
            let report = try await service.schemaReport(for: [Gadget.self, Part.self, Phantom.self])
            let found = report.mismatches.filter { $0.kind == kind }
            #expect(found.count == 1, "\(kind): \(report)")
            #expect(
                found.first?.entity == entity && found.first?.property == property && found.first?.column == column,
                "\(kind): \(found)")
            #expect(found.first?.message.contains(says) == true, "\(kind): \(found.first?.message ?? "not found")")
        }
    }

    /// All of them at once, and nothing else: the `created` column with a default and the nullable `note` need no
    /// property, and `madeAt` agrees.
    @Test func everyMismatchIsReportedInOneCallAndTheThrowingVariantListsThem() async throws {
        try await withTables(ddl[0], ddl[1]) { service, log in
            let report = try await service.schemaReport(for: [Gadget.self, Part.self, Phantom.self])
            print(report)
            let kinds: [String] = report.mismatches.map(\.kind.rawValue).sorted()
            let expectedKinds: [String] = Self.expected.map { $0.0.rawValue }.sorted()
            #expect(kinds == expectedKinds, "\(report)")
            let named: [String] = report.mismatches.compactMap { $0.property } + report.mismatches.compactMap { $0.column }
            #expect(!named.contains("madeAt") && !named.contains("created") && !named.contains("note"), "\(report)")
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.verifySchema(of: [Gadget.self, Part.self, Phantom.self])
            }
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.hasPrefix("8 mismatches between the models and the schema:") == true, "\(error?.message ?? "")")
            #expect(!log.all.contains { $0.hasPrefix("INSERT") || $0.hasPrefix("CREATE") || $0.hasPrefix("ALTER") }, "verify only reads")
        }
    }

    /// Fixing the schema makes the report empty: the checks follow the catalog, read afresh on every call.
    @Test func afterTheSchemaIsFixedTheReportIsEmpty() async throws {
        try await withTables(ddl[0], ddl[1]) { service, _ in
            try await service.execute(
                unsafeSQL: """
                    ALTER TABLE gadgets ALTER COLUMN name SET NOT NULL, ALTER COLUMN nickname DROP NOT NULL,
                        ALTER COLUMN weight TYPE bigint USING 0, ADD COLUMN colour text NOT NULL, ALTER COLUMN serial SET DEFAULT '',
                        ADD PRIMARY KEY (uuid);
                    ALTER TABLE parts ADD FOREIGN KEY (gadget_id) REFERENCES gadgets;
                    CREATE TABLE phantoms (uuid uuid PRIMARY KEY);
                    """)
            let report = try await service.schemaReport(for: [Gadget.self, Part.self, Phantom.self])
            #expect(report.matches, "\(report)")
        }
    }
}

/// The one-line test the Testing article shows, against the repository's migrations.
@Suite struct SchemaTestHelperTests {
    @Test func theBookStoresModelsMatchItsMigrations() async throws {
        try await TestPostgres.assertSchemaMatches(
            models: BookstoreSchema.models, migrations: repositoryMigrations)
    }

    @Test func aModelTheMigrationsDoNotCoverFailsTheAssertionByName() async throws {
        let error = await #expect(throws: StructPostgresError.self) {
            try await TestPostgres.assertSchemaMatches(models: [BookModel.self, Phantom.self], migrations: repositoryMigrations)
        }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("missingTable: Phantom (phantoms)") == true, "\(error?.message ?? "")")
    }
}
