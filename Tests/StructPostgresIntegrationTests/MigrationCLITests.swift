import Foundation
import StructPostgres
import Testing

private let create = """
    -- migrate:up
    CREATE TABLE authors (uuid uuid PRIMARY KEY, name text NOT NULL);
    CREATE TABLE runs (migration int NOT NULL);
    INSERT INTO runs VALUES (1);

    -- migrate:down
    DROP TABLE runs;
    DROP TABLE authors;
    """

private let addBooks = """
    -- migrate:up
    CREATE TABLE books (uuid uuid PRIMARY KEY, author_id uuid REFERENCES authors (uuid) ON DELETE SET NULL);
    INSERT INTO runs VALUES (2);

    -- migrate:down
    DROP TABLE books;
    """

private let concurrentIndex = """
    -- migrate:up transaction:false
    CREATE INDEX CONCURRENTLY books_author_id_idx ON books (author_id);
    INSERT INTO runs VALUES (3);

    -- migrate:down transaction:false
    DROP INDEX CONCURRENTLY books_author_id_idx;
    """

private func count(_ sql: String, _ service: PostgresService) async throws -> Int {
    Int(try await service.query(.init(unsafeSQL: sql))[0].decode(Int64.self))
}

@Suite(.serialized) struct MigrationCLITests {
    @Test func upStatusDownRedoAndVerify() async throws {
        try await withCLI(["0001_create.sql": create, "0002_add_books.sql": addBooks, "0003_index.sql": concurrentIndex]) {
            cli, _, service in
            let pending = try await cli.run("migrate", "status")
            #expect(pending.status == 0)
            #expect(pending.output.contains("pending"))

            let up = try await cli.run("migrate", "up")
            #expect(up.status == 0, "\(up.errors)")
            #expect(up.output.contains("Applied 0001_create.sql"))
            #expect(up.output.contains("Applied 0003_index.sql"))
            #expect(try await count("SELECT count(*) FROM pg_indexes WHERE indexname = 'books_author_id_idx'", service) == 1)
            #expect(try await count("SELECT count(*) FROM runs", service) == 3)

            let status = try await cli.run("migrate", "status", "--json")
            let rows = try JSONDecoder.iso8601.decode([MigrationStatus].self, from: Data(status.output.utf8))
            #expect(rows.map(\.state) == [.applied, .applied, .applied])
            #expect(rows.map(\.name) == ["create", "add_books", "index"])
            #expect(rows.allSatisfy { $0.appliedAt != nil && $0.executionMilliseconds != nil })
            let history = try await service.query(
                "SELECT version, length(checksum), execution_ms >= 0 FROM structpg_migrations ORDER BY version")
            let recorded: [(Int64, Int32, Bool)] = try history.map { try $0.decode((Int64, Int32, Bool).self) }
            #expect(recorded.map(\.0) == [1, 2, 3])
            #expect(recorded.allSatisfy { $0.1 == 64 && $0.2 })

            let down = try await cli.run("migrate", "down", "--steps", "2")
            #expect(down.status == 0, "\(down.errors)")
            #expect(down.output.contains("Reverted 0003_index.sql") && down.output.contains("Reverted 0002_add_books.sql"))
            #expect(try await count("SELECT count(*) FROM structpg_migrations", service) == 1)
            #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename = 'books'", service) == 0)

            let redo = try await cli.run("migrate", "redo")
            #expect(redo.status == 0, "\(redo.errors)")
            #expect(redo.output.contains("Reverted 0001_create.sql") && redo.output.contains("Applied 0001_create.sql"))

            let verify = try await cli.run("migrate", "verify")
            #expect(verify.status == 0)
            #expect(verify.output.contains("Pending: 0002_add_books.sql, 0003_index.sql"))
        }
    }

    @Test func aMigrationThatEmptiesTheSearchPathIsRecordedAndDoesNotLeakItsSettings() async throws {
        let dumpStyle = """
            -- migrate:up
            SELECT pg_catalog.set_config('search_path', '', false);
            CREATE TABLE public.dumped (id int);
            SET statement_timeout = 100;
            """
        // A leaked 100 ms timeout cancels this sleep; a 1 ms one also cancelled the migrator's own bookkeeping
        // after the SET on a loaded machine.
        let after = "-- migrate:up\nCREATE TABLE runs_after (id int);\nSELECT pg_sleep(0.3);"
        try await withCLI(["0001_dump.sql": dumpStyle, "0002_after.sql": after]) { cli, _, service in
            let up = try await cli.run("migrate", "up")
            #expect(up.status == 0, "\(up.errors)")
            #expect(try await count("SELECT count(*) FROM public.structpg_migrations", service) == 2)
            #expect(try await cli.run("migrate", "verify").status == 0)
        }
    }

    @Test func redoDoesNotSlipInAnOutOfOrderMigration() async throws {
        try await withCLI(["0001_create.sql": create, "0003_add_books.sql": addBooks]) { cli, files, service in
            #expect(try await cli.run("migrate", "up").status == 0)
            try files.write("0002_late.sql", "-- migrate:up\nINSERT INTO runs VALUES (99);")
            let redo = try await cli.run("migrate", "redo")
            #expect(redo.status == 0, "\(redo.errors)")
            #expect(redo.output.contains("Reverted 0003_add_books.sql") && redo.output.contains("Applied 0003_add_books.sql"))
            #expect(!redo.output.contains("0002"))
            #expect(try await count("SELECT count(*) FROM runs WHERE migration = 99", service) == 0)
        }
    }

    @Test func dryRunPrintsTheSQLAndChangesNothing() async throws {
        try await withCLI(["0001_create.sql": create]) { cli, _, service in
            let dry = try await cli.run("migrate", "up", "--dry-run")
            #expect(dry.status == 0)
            #expect(dry.output.contains("-- 0001_create.sql (up)\nBEGIN;\nCREATE TABLE authors"))
            #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename IN ('authors', 'structpg_migrations')", service) == 0)
        }
    }

    @Test func newCreatesTheNextFile() async throws {
        try await withCLI(["0007_create.sql": create]) { cli, files, _ in
            let new = try await cli.run("migrate", "new", "--sequential", "add_isbn")
            #expect(new.status == 0, "\(new.errors)")
            let path = files.directory.appendingPathComponent("0008_add_isbn.sql").path
            #expect(new.output.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix("0008_add_isbn.sql"))
            #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("-- migrate:up"))
            let bad = try await cli.run("migrate", "new", "no spaces")
            #expect(bad.status != 0)
            #expect(bad.errors == "structpg: 'no spaces' must hold only ASCII letters, digits, '_' and '-'\n")
            let steps = try await cli.run("migrate", "down", "--steps", "0")
            #expect(steps.status != 0)
            #expect(steps.errors == "structpg: --steps must be at least 1\n")
        }
    }

    @Test func baselineAdoptsAnExistingDatabase() async throws {
        try await withCLI(["0001_create.sql": create, "0002_add_books.sql": addBooks]) { cli, _, service in
            try await service.execute(
                unsafeSQL: "CREATE TABLE authors (uuid uuid PRIMARY KEY, name text NOT NULL); CREATE TABLE runs (migration int NOT NULL)")
            let baseline = try await cli.run("migrate", "baseline", "1")
            #expect(baseline.status == 0, "\(baseline.errors)")
            let up = try await cli.run("migrate", "up")
            #expect(up.status == 0, "\(up.errors)")
            #expect(up.output.contains("Applied 0002_add_books.sql") && !up.output.contains("0001"))
            let status = try await cli.run("migrate", "status")
            #expect(status.output.contains("baseline"))
            #expect(try await cli.run("migrate", "baseline", "1").status != 0)
        }
    }

    @Test func twoRunnersStartedTogetherApplyEachMigrationOnce() async throws {
        try await withCLI(["0001_create.sql": create, "0002_add_books.sql": addBooks, "0003_index.sql": concurrentIndex]) {
            cli, _, service in
            let first = try cli.start("migrate", "up")
            let second = try cli.start("migrate", "up")
            await CLI.exit(of: first)
            await CLI.exit(of: second)
            #expect(first.terminationStatus == 0)
            #expect(second.terminationStatus == 0)
            #expect(try await count("SELECT count(*) FROM runs", service) == 3)
            #expect(try await count("SELECT count(DISTINCT migration) FROM runs", service) == 3)
            #expect(try await count("SELECT count(*) FROM structpg_migrations", service) == 3)
        }
    }

    @Test func aFailingThirdStatementLeavesNothingAndNamesFileAndLine() async throws {
        let broken = """
            -- migrate:up
            CREATE TABLE first (id int);
            CREATE TABLE second (id int);
            INSERT INTO first
              SELECT id FROM missing_table;
            """
        try await withCLI(["0001_create.sql": create, "0002_broken.sql": broken]) { cli, _, service in
            let up = try await cli.run("migrate", "up")
            #expect(up.status != 0)
            #expect(up.output.contains("Applied 0001_create.sql"))
            #expect(up.errors.hasPrefix("structpg: 0002_broken.sql:5: relation \"missing_table\" does not exist"), "\(up.errors)")
            #expect(up.errors.split(separator: "\n").count == 1)
            #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename IN ('first', 'second')", service) == 0)
            #expect(try await count("SELECT count(*) FROM structpg_migrations WHERE version = 2", service) == 0)
            #expect(try await count("SELECT count(*) FROM structpg_migrations WHERE version = 1", service) == 1)
        }
    }

    @Test func aFailingNonTransactionalMigrationRecordsWhereItStopped() async throws {
        let partial = """
            -- migrate:up transaction:false
            CREATE TABLE kept (id int);
            CREATE INDEX CONCURRENTLY kept_idx ON nowhere (id);
            CREATE TABLE never (id int);
            """
        try await withCLI(["0001_partial.sql": partial]) { cli, _, service in
            let up = try await cli.run("migrate", "up")
            #expect(up.status != 0)
            #expect(up.errors.contains("0001_partial.sql:3"))
            let status = try await cli.run("migrate", "status")
            #expect(status.output.contains("failed at statement 2, line 3"), "\(status.output)")
            let again = try await cli.run("migrate", "up")
            #expect(again.status != 0)
            #expect(again.errors.contains("failed at statement 2 (line 3)") && again.errors.contains("migrate repair"))
            #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename = 'kept'", service) == 1)
            #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename = 'never'", service) == 0)
        }
    }

    @Test func anEditedAppliedFileIsRefusedUntilRepaired() async throws {
        try await withCLI(["0001_create.sql": create, "0002_add_books.sql": addBooks]) { cli, files, _ in
            #expect(try await cli.run("migrate", "up", "--to", "1").status == 0)
            // Line endings and a byte-order mark do not count as a change.
            try files.write("0001_create.sql", "\u{FEFF}" + create.replacingOccurrences(of: "\n", with: "\r\n"))
            #expect(try await cli.run("migrate", "verify").status == 0)

            try files.write("0001_create.sql", create.replacingOccurrences(of: "name text", with: "full_name text"))
            for command in ["up", "verify"] {
                let refused = try await cli.run("migrate", command)
                #expect(refused.status != 0)
                #expect(refused.errors.contains("0001_create.sql changed after it was applied"), "\(refused.errors)")
            }
            #expect(try await cli.run("migrate", "status").output.contains("changed"))
            let repair = try await cli.run("migrate", "repair", "--accept", "1")
            #expect(repair.status == 0)
            #expect(repair.output.contains("accepted the changed file 0001_create.sql"))
            #expect(try await cli.run("migrate", "up").status == 0)
        }
    }

    @Test func aDeletedAppliedFileAndAnOutOfOrderFileAreRefused() async throws {
        try await withCLI(["0001_create.sql": create, "0003_add_books.sql": addBooks]) { cli, files, _ in
            #expect(try await cli.run("migrate", "up").status == 0)
            try files.write("0002_late.sql", "SELECT 1;")
            let late = try await cli.run("migrate", "up")
            #expect(late.status != 0)
            #expect(late.errors.contains("0002_late.sql is older than the newest applied migration (3)"))
            #expect(try await cli.run("migrate", "up", "--allow-out-of-order").status == 0)

            try FileManager.default.removeItem(at: files.directory.appendingPathComponent("0003_add_books.sql"))
            let missing = try await cli.run("migrate", "up")
            #expect(missing.status != 0)
            #expect(missing.errors.contains("migration 3 (add_books) was applied but its file is missing"))
            #expect(try await cli.run("migrate", "status").output.contains("missing"))
        }
    }

    @Test(arguments: [
        (["create.sql": create], "'create.sql' is not a migration file name"),
        (["0001_a.sql": create, "001_b.sql": addBooks], "two migrations have version 1: 0001_a.sql and 001_b.sql"),
        (["0001_empty.sql": "-- migrate:up\n-- only a comment\n-- migrate:down\nSELECT 1;"], "0001_empty.sql"),
    ])
    func badFilesAreRefusedNamingTheFile(files: [String: String], expected: String) async throws {
        try await withCLI(files) { cli, _, _ in
            let up = try await cli.run("migrate", "up")
            #expect(up.status != 0)
            #expect(up.errors.contains(expected), "\(up.errors)")
            #expect(up.errors.split(separator: "\n").count == 1)
        }
    }

    @Test func anEmptyUpPartSaysSo() async throws {
        try await withCLI(["0001_empty.sql": "-- migrate:up\n\n-- migrate:down\nSELECT 1;"]) { cli, _, _ in
            // Listed as pending (as a file `migrate new` has just made), refused when applied.
            let status = try await cli.run("migrate", "status")
            #expect(status.status == 0, "\(status.errors)")
            #expect(status.output.contains("empty  pending"), "\(status.output)")
            let up = try await cli.run("migrate", "up")
            #expect(up.status != 0)
            #expect(up.errors.contains("the up part holds no SQL statement"))
        }
    }

    /// A refusal (`migrationRefused`) changes nothing: every step is checked before the first runs, and the history
    /// table is created only for a run that goes ahead.
    @Test func aRefusedRunLeavesTheDatabaseAsItWas() async throws {
        let first = "-- migrate:up\nCREATE TABLE first_table (id int);"  // no down part
        let second = "-- migrate:up\nCREATE TABLE second_table (id int);\n-- migrate:down\nDROP TABLE second_table;"
        let empty = "-- migrate:up\n-- to be written\n-- migrate:down\nSELECT 1;"
        try await withCLI(["0001_first.sql": first, "0002_second.sql": second, "0003_empty.sql": empty]) { cli, files, service in
            func migrator() throws -> Migrator { Migrator(service: service, migrations: try MigrationSet(directory: files.directory)) }
            func refuses(_ what: String, _ run: () async throws -> Void) async {
                let error = await #expect(throws: StructPostgresError.self, "\(what)") { try await run() }
                #expect(error?.code == .migrationRefused, "\(what): \(String(describing: error))")
            }
            let tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"

            // A new database: a bad file (an empty up part) after two good ones, through the command and the library.
            let up = try await cli.run("migrate", "up")
            #expect(up.status != 0)
            #expect(up.errors.contains("0003_empty.sql") && up.errors.contains("the up part holds no SQL statement"), "\(up.errors)")
            #expect(!up.output.contains("Applied"), "\(up.output)")
            #expect(try await count(tables, service) == 0, "no history table, no migration applied")
            let onNewDatabase = try migrator()
            await refuses("migrate") { try await onNewDatabase.migrate() }
            await refuses("migrate to a missing version") { try await onNewDatabase.migrate(to: 9) }
            await refuses("redo with nothing applied") { try await onNewDatabase.redo() }
            await refuses("baseline a missing version") { _ = try await onNewDatabase.baseline(9) }
            await refuses("repair a version not applied") { try await onNewDatabase.repair(accept: 1) }
            #expect(try await count(tables, service) == 0, "no history table, no migration applied")

            // A database with history: neither the history nor the schema changes.
            try await migrator().migrate(to: 1)
            func snapshot() async throws -> String {
                let names = try await service.query(
                    "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'")
                return try await tableDigest("structpg_migrations", service) + " " + (try names[0].decode(String.self))
            }
            let applied = try await snapshot()
            #expect(applied.hasSuffix(" first_table,structpg_migrations"), "\(applied)")
            await refuses("migrate with a good pending file before a bad one") { try await migrator().migrate() }
            #expect(try await snapshot() == applied)

            try FileManager.default.removeItem(at: files.directory.appendingPathComponent("0003_empty.sql"))
            try await migrator().migrate()
            let both = try await snapshot()
            #expect(both.hasSuffix(" first_table,second_table,structpg_migrations"), "\(both)")
            await refuses("rollback past a file without a down part") { try await migrator().rollback(steps: 2) }
            #expect(try await snapshot() == both)

            try files.write("0001_first.sql", first.replacingOccurrences(of: "id int", with: "id bigint"))
            for command in ["up", "down", "redo"] {
                let refused = try await cli.run("migrate", command)
                #expect(refused.status != 0)
                #expect(refused.errors.contains("0001_first.sql changed after it was applied"), "\(command): \(refused.errors)")
            }
            await refuses("migrate with a changed file") { try await migrator().migrate() }
            #expect(try await snapshot() == both)
        }
    }

    @Test func waitReturnsOnceTheServerAcceptsConnections() async throws {
        try await withCLI(["0001_create.sql": create]) { cli, _, _ in
            let wait = try await CLI.run(["wait", "--timeout", "10"], environment: ["DATABASE_URL": cli.databaseURL])
            #expect(wait.status == 0, "\(wait.errors)")
            #expect(wait.output.contains("accepts connections"))
        }
    }

    @Test func anUnreachableDatabaseFailsWithinTheTimeout() async throws {
        let started = ContinuousClock.now
        let result = try await CLI.run(
            ["migrate", "status", "--database-url", "postgres://app:pw@127.0.0.1:1/app?sslmode=disable&connect_timeout=2"],
            environment: [:])
        #expect(result.status != 0)
        #expect(result.errors.contains("cannot connect to postgres://app:****@127.0.0.1:1/app"), "\(result.errors)")
        #expect(ContinuousClock.now - started < .seconds(30))
        let wait = try await CLI.run(["wait", "--database-url", "postgres://app@127.0.0.1:1/app", "--timeout", "1"], environment: [:])
        #expect(wait.status != 0)
        #expect(wait.errors.contains("did not accept connections within"))
    }

    @Test(.enabled(if: TestServer.usesPasswords, "the server of DATABASE_URL does not ask for a password"))
    func aWrongPasswordFailsWithoutShowingIt() async throws {
        try await withCLI(["0001_create.sql": create]) { cli, _, _ in
            var components = URLComponents(string: cli.databaseURL)!
            components.password = "wrong-zq9x-secret"
            let result = try await CLI.run(["migrate", "status", "--database-url", components.string!], environment: [:])
            #expect(result.status != 0)
            // PostgreSQL says "password authentication failed"; PgBouncer (the pooler pass) "SASL authentication failed".
            #expect(
                result.errors.contains("password authentication failed") || result.errors.contains("SASL authentication failed"),
                "\(result.errors)")
            #expect(!result.errors.contains("zq9x") && !result.output.contains("zq9x"))
        }
    }
}

extension MigrationCLITests {
    /// ArgumentParser quotes an argument it did not expect: a URL or a `password=` setting given in the wrong place
    /// is shown without its password.
    @Test func aMisplacedURLIsQuotedWithoutItsPassword() async throws {
        let cases: [([String], String)] = [
            (
                ["migrate", "up", "postgres://app:Zq9x-Secret@127.0.0.1:1/shop"],
                "Unexpected argument 'postgres://app:****@127.0.0.1:1/shop'"
            ),
            (["migrate", "up", "postgresql://app:Zq9x@Secret@db/shop?sslmode=disable"], "postgresql://app:****@db/shop"),
            (["migrate", "status", "host=db password=Zq9x-Secret"], "password=****"),
            (["migrate", "status", "password='Zq9x Secret'"], "password=****"),
        ]
        for (arguments, shown) in cases {
            let result = try await CLI.run(arguments, environment: [:])
            #expect(result.status == 64, "\(arguments)")
            #expect(result.errors.contains(shown), "\(result.errors)")
            #expect(!result.errors.contains("Zq9x") && !result.output.contains("Zq9x"), "\(result.errors)")
        }
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
