import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

@Suite struct MigrationParsingTests {
    @Test func readsUpAndDownPartsWithTheirLines() throws {
        let text = """
            -- a comment before the parts
            -- migrate:up
            CREATE TABLE a (id int);
            CREATE TABLE b (id int);

            -- migrate:down
            DROP TABLE b;
            DROP TABLE a;
            """
        let migration = try Migration(fileName: "0042_two_tables.sql", text: text)
        #expect(migration.version == 42)
        #expect(migration.name == "two_tables")
        #expect(migration.up.transactional)
        #expect(migration.up.statements.map(\.line) == [3, 4])
        #expect(migration.down?.statements.map(\.sql) == ["DROP TABLE b", "DROP TABLE a"])
        #expect(migration.down?.statements.first?.line == 7)
    }

    @Test func aFileWithoutMarkersIsAllUp() throws {
        let migration = try Migration(fileName: "20240501120000_seed.sql", text: "INSERT INTO a VALUES (1);")
        #expect(migration.version == 20_240_501_120_000)
        #expect(migration.up.statements.map(\.sql) == ["INSERT INTO a VALUES (1)"])
        #expect(migration.down == nil)
    }

    @Test func markersAreReadWhateverTheirSpacingAndCase() throws {
        let migration = try Migration(
            fileName: "0001_t.sql", text: "--migrate:up\nCREATE TABLE t (id int);\n--  Migrate:Down\nDROP TABLE t;")
        #expect(migration.up.statements.map(\.sql) == ["CREATE TABLE t (id int)"])
        #expect(migration.down?.statements.map(\.sql) == ["DROP TABLE t"])
        let function = try Migration(
            fileName: "0002_f.sql",
            text: "-- migrate:up\nDO $$ BEGIN PERFORM 1; END $$;\nCREATE RULE r AS ON INSERT TO t DO ALSO (SELECT 1; SELECT 2);")
        #expect(function.up.statements.count == 2)
    }

    @Test func transactionFalseOptsOut() throws {
        let migration = try Migration(
            fileName: "0001_index.sql", text: "-- migrate:up transaction:false\nCREATE INDEX CONCURRENTLY i ON a (id);")
        #expect(!migration.up.transactional)
    }

    @Test func theChecksumIgnoresLineEndingsAndAByteOrderMark() throws {
        let plain = try Migration(fileName: "0001_a.sql", text: "CREATE TABLE a (id int);\nCREATE TABLE b (id int);\n")
        let windows = try Migration(fileName: "0001_a.sql", text: "\u{FEFF}CREATE TABLE a (id int);\r\nCREATE TABLE b (id int);\r\n")
        let edited = try Migration(fileName: "0001_a.sql", text: "CREATE TABLE a (id bigint);\nCREATE TABLE b (id int);\n")
        #expect(plain.checksum == windows.checksum)
        #expect(plain.checksum != edited.checksum)
        #expect(plain.checksum.count == 64)
    }

    @Test(arguments: [
        ("create.sql", "SELECT 1;", "is not a migration file name"),
        ("0001_bad name.sql", "SELECT 1;", "is not a migration file name"),
        ("0001_x.sql", "-- migrate:down\nSELECT 1;", "no '-- migrate:up' part"),
        ("0001_x.sql", "-- migrate:up\nSELECT 1;\n-- migrate:up\nSELECT 2;", "a second '-- migrate:up' marker"),
        ("0001_x.sql", "-- migrate:up transaction:maybe\nSELECT 1;", "unknown option 'transaction:maybe'"),
        ("0001_x.sql", "-- migrate:sideways\nSELECT 1;", "unknown marker"),
        ("0001_x.sql", "SET lock_timeout = 1;\n-- migrate:up\nSELECT 1;", "SQL before the first '-- migrate:' marker"),
        ("0001_x.sql", "-- migrate:up\nBEGIN;\nCREATE TABLE a (id int);\nCOMMIT;", "BEGIN controls the transaction"),
        ("0001_x.sql", "-- migrate:up transaction:false\nCREATE TABLE a (id int);\ncommit;", "COMMIT controls the transaction"),
    ])
    func malformedFilesAreRefusedNamingTheFile(fileName: String, text: String, expected: String) {
        let error = #expect(throws: StructPostgresError.self) { try Migration(fileName: fileName, text: text) }
        #expect(error?.code == .migrationRefused)
        #expect(error?.file == fileName)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    /// A file `structpg migrate new` has just made parses (so that `status` lists it); applying it is refused.
    @Test func anEmptyUpPartParses() throws {
        let migration = try Migration(fileName: "0001_x.sql", text: "-- migrate:up\n\n-- migrate:down\n")
        #expect(migration.up.statements.isEmpty)
    }

    @Test func twoFilesOfOneVersionAreRefused() throws {
        let error = #expect(throws: StructPostgresError.self) {
            try MigrationSet([
                try Migration(fileName: "0001_a.sql", text: "SELECT 1;"),
                try Migration(fileName: "1_b.sql", text: "SELECT 2;"),
            ])
        }
        #expect(error?.message == "two migrations have version 1: 0001_a.sql and 1_b.sql")
    }

    @Test func loadsMigrationsFromBundleResources() throws {
        let set = try MigrationSet(bundle: .module, subdirectory: "migrations")
        #expect(set.migrations.map(\.fileName) == ["0001_create_books.sql", "0002_index_titles.sql"])
        #expect(set[2]?.up.transactional == false)
    }

    @Test func aFailureLinePointsWhereThePositionIs() {
        var error = StructPostgresError(.server, "syntax error at or near \"FORM\"", sqlState: "42601")
        error.position = 20
        let migration = try! Migration(fileName: "0003_x.sql", text: "-- migrate:up\nSELECT 1;\nSELECT a\n  FORM b;")
        let statement = migration.up.statements[1]
        let failure = Migrator.failure(error, migration: migration, statement: statement)
        #expect(failure.line == 4)
        #expect(failure.message == "0003_x.sql:4: syntax error at or near \"FORM\"")
        #expect(failure.code == .migrationFailed)
    }
}
