import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PostgresNIO
import StructPostgres
import StructPostgresTesting
import Testing

private let authors = """
    -- migrate:up
    CREATE TABLE authors (uuid uuid PRIMARY KEY, name text NOT NULL);

    -- migrate:down
    DROP TABLE authors;
    """

/// What dbmate and sqlx users expect of `structpg`: version, short flags, `db create`/`drop`, `migrate dump`,
/// `.env`, timestamped migration names.
@Suite(.serialized) struct CLICommandsTests {
    @Test func versionAndShortFlags() async throws {
        let version = try await CLI.run(["--version"], environment: [:])
        #expect(version.status == 0)
        #expect(version.output.trimmingCharacters(in: .whitespacesAndNewlines) == StructPostgresVersion.current)
        // The binary's `main` is the synchronous `StructPG.main()`: ArgumentParser's own one stopped there, asking for
        // an availability annotation.
        #expect(version.errors.isEmpty, "\(version.errors)")
        try await withCLI(["0001_authors.sql": authors]) { cli, files, service in
            let up = try await CLI.run(["migrate", "up", "-d", cli.databaseURL, "-m", files.directory.path], environment: [:])
            #expect(up.status == 0, "\(up.errors)")
            #expect(up.output.contains("Applied 0001_authors.sql"))
            #expect(try await service.query("SELECT to_regclass('authors') IS NOT NULL")[0].decode(Bool.self))
        }
    }

    @Test func dbCreateAndDropNameTheDatabaseAndRefuseAnExistingOne() async throws {
        let admin = try await TestDatabase.create()
        var settings = admin.settings
        settings.database = "structpg_cli_\(UUID().uuidString.prefix(8).lowercased())"
        let url = admin.url.replacingOccurrences(of: "/\(admin.settings.database)?", with: "/\(settings.database)?")
        #expect(url != admin.url)
        let create = try await CLI.run(["db", "create", "-d", url], environment: [:])
        #expect(create.status == 0, "\(create.errors)")
        #expect(create.output.contains("Created database \(settings.database)"))
        let again = try await CLI.run(["db", "create", "-d", url], environment: [:])
        #expect(again.status == 1)
        #expect(again.errors.contains("database \"\(settings.database)\" already exists"), "\(again.errors)")
        #expect(again.errors.contains("[SQLSTATE 42P04]"))
        #expect(!again.errors.contains("of the script"), "one statement of the user's own: no line of a script to name")
        let drop = try await CLI.run(["db", "drop", "-d", url], environment: [:])
        #expect(drop.status == 0, "\(drop.errors)")
        let missing = try await CLI.run(["db", "drop", "-d", url], environment: [:])
        #expect(missing.status == 1)
        #expect(missing.errors.contains("does not exist"), "\(missing.errors)")
        let tolerated = try await CLI.run(["db", "drop", "--if-exists", "-d", url], environment: [:])
        #expect(tolerated.status == 0, "\(tolerated.errors)")
        try await admin.drop()
    }

    @Test(.enabled(if: hasPgDump, "pg_dump is not on the PATH"))
    func dumpWritesTheSchema() async throws {
        try await withCLI(["0001_authors.sql": authors]) { cli, files, _ in
            #expect(try await cli.run("migrate", "up").status == 0)
            let output = files.directory.appendingPathComponent("schema.sql")
            let dump = try await CLI.run(["migrate", "dump", "-d", cli.databaseURL, "-o", output.path], environment: [:])
            #expect(dump.status == 0, "\(dump.errors)")
            let schema = try String(contentsOf: output, encoding: .utf8)
            #expect(schema.contains("CREATE TABLE public.authors"))
            #expect(!schema.contains("ALTER TABLE public.authors OWNER"), "--no-owner")
        }
    }

    @Test func dotEnvSuppliesTheDatabaseURL() async throws {
        try await withCLI(["0001_authors.sql": authors]) { cli, files, _ in
            let project = FileManager.default.temporaryDirectory.appendingPathComponent("project-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: project) }
            try "# local settings\nexport DATABASE_URL=\"\(cli.databaseURL)\" # the local cluster\nOTHER=1 # a comment\n"
                .write(to: project.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
            let up = try await CLI.run(["migrate", "up", "-m", files.directory.path], environment: [:], in: project)
            #expect(up.status == 0, "\(up.errors)")
            #expect(up.output.contains("Applied 0001_authors.sql"))
            let overridden = try await CLI.run(
                ["migrate", "status", "-m", files.directory.path], environment: ["DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"],
                in: project)
            #expect(overridden.status == 1, "a variable already set wins over .env")
        }
    }

    /// `observe add` writes a migration installing the change-notification triggers; applied, the table is observable.
    @Test func observeAddWritesAMigrationThatInstallsTheTriggers() async throws {
        try await withCLI(["0001_authors.sql": authors]) { cli, files, service in
            let add = try await cli.run("observe", "add", "authors")
            #expect(add.status == 0, "\(add.errors)")
            let file = URL(fileURLWithPath: add.output.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(file.lastPathComponent.wholeMatch(of: /20[0-9]{12}_observe_authors\.sql/) != nil, "\(file.lastPathComponent)")
            #expect(try String(contentsOf: file, encoding: .utf8).contains("SELECT structpg_observe('\"authors\"');"))
            #expect(try await cli.run("migrate", "up").status == 0)
            let triggers = "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'authors'::regclass AND tgname LIKE 'structpg_notify%'"
            #expect(try await service.query(PostgresQuery(unsafeSQL: triggers))[0].decode(Int64.self) == 1)
            #expect(try await cli.run("migrate", "down").status == 0, "the down part removes them")
            #expect(try await service.query(PostgresQuery(unsafeSQL: triggers))[0].decode(Int64.self) == 0)
            let withKeys = try await cli.run("observe", "add", "--keys", "authors")
            #expect(withKeys.status == 0, "\(withKeys.errors)")
            #expect(try await cli.run("migrate", "up").status == 0)
            #expect(
                try await service.query(PostgresQuery(unsafeSQL: triggers))[0].decode(Int64.self) == 4,
                "one per operation, with transition tables")
            let none = try await cli.run("observe", "add")
            #expect(none.status != 0)
        }
    }

    /// `migrate new` names files by UTC time; a folder mixing such names with `NNNN_` ones applies in version order.
    @Test func timestampNamesAndSequentialNamesApplyInOrder() async throws {
        try await withCLI(["0001_authors.sql": authors]) { cli, files, service in
            let new = try await cli.run("migrate", "new", "add_books")
            #expect(new.status == 0, "\(new.errors)")
            let created = URL(fileURLWithPath: new.output.trimmingCharacters(in: .whitespacesAndNewlines)).lastPathComponent
            #expect(created.wholeMatch(of: /20[0-9]{12}_add_books\.sql/) != nil, "\(created)")
            let version = String(created.prefix(14))
            try files.write(
                created,
                """
                -- migrate:up
                CREATE TABLE books (uuid uuid PRIMARY KEY, author_id uuid NOT NULL REFERENCES authors (uuid));

                -- migrate:down
                DROP TABLE books;
                """)
            let second = try await cli.run("migrate", "new", "add_reviews")
            let next = URL(fileURLWithPath: second.output.trimmingCharacters(in: .whitespacesAndNewlines)).lastPathComponent
            #expect(next > created, "a second file made in the same second still sorts after the first")
            try files.write(
                next,
                """
                -- migrate:up
                CREATE TABLE reviews (uuid uuid PRIMARY KEY, book_id uuid NOT NULL REFERENCES books (uuid));

                -- migrate:down
                DROP TABLE reviews;
                """)
            let up = try await cli.run("migrate", "up")
            #expect(up.status == 0, "\(up.errors)")
            let order = up.output.split(separator: "\n").filter { $0.hasPrefix("Applied") }.map { $0.split(separator: " ")[1] }
            #expect(order == ["0001_authors.sql", Substring(created), Substring(next)])
            let versions = try await service.query("SELECT version FROM structpg_migrations ORDER BY applied_at, version")
            #expect(try versions.map { try $0.decode(Int64.self) } == [1, Int64(version)!, Int64(next.prefix(14))!])
        }
    }
}

private let hasPgDump =
    ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":")
    .contains { FileManager.default.isExecutableFile(atPath: "\($0)/pg_dump") } ?? false

/// What `structpg` says when the database cannot be reached, or is missing, and where it prints.
extension CLICommandsTests {
    @Test(.enabled(if: CLIMessages.nothingListensOnTheDefaultPort, "a server listens on localhost:5432, where the defaults point"))
    func withNothingConfiguredTheErrorNamesDatabaseURL() async throws {
        let files = try MigrationFiles(["0001_authors.sql": authors])
        defer { files.remove() }
        let result = try await CLI.run(["migrate", "status", "-m", files.directory.path], environment: [:])
        #expect(result.status == 1)
        #expect(result.errors.contains("connection refused") && result.errors.contains("set DATABASE_URL"), "\(result.errors)")
    }

    @Test func aRefusedConnectionSaysSoWithoutNIOsInternals() async throws {
        let result = try await CLI.run(["migrate", "status", "-d", "postgres://app@127.0.0.1:1/app?sslmode=disable"], environment: [:])
        #expect(result.status == 1)
        #expect(
            result.errors.contains("cannot connect to postgres://app@127.0.0.1:1/app?sslmode=disable: connection refused"),
            "\(result.errors)")
        #expect(!result.errors.contains("SingleConnectionFailure") && !result.errors.contains("set DATABASE_URL"), "\(result.errors)")
    }

    @Test func aMissingDatabaseHintsAtDbCreate() async throws {
        let admin = try await TestDatabase.create()
        let url = admin.url.replacingOccurrences(
            of: "/\(admin.settings.database)?", with: "/structpg_missing_\(UUID().uuidString.prefix(8).lowercased())?")
        let result = try await CLI.run(["migrate", "status", "-d", url], environment: [:])
        try await admin.drop()
        #expect(result.status == 1)
        #expect(
            result.errors.contains("does not exist") && result.errors.contains("create it with `structpg db create`"), "\(result.errors)")
    }

    @Test func droppingAMissingDatabaseWithIfExistsSaysItDidNotExist() async throws {
        let admin = try await TestDatabase.create()
        let url = admin.url.replacingOccurrences(
            of: "/\(admin.settings.database)?", with: "/structpg_missing_\(UUID().uuidString.prefix(8).lowercased())?")
        let result = try await CLI.run(["db", "drop", "--if-exists", "-d", url], environment: [:])
        try await admin.drop()
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("does not exist: nothing to drop") && !result.output.contains("Dropped"), "\(result.output)")
    }

    @Test func aSequentialNameAfterTimestampedFilesIsRefused() async throws {
        let files = try MigrationFiles(["20261125143000_authors.sql": authors])
        defer { files.remove() }
        let result = try await CLI.run(["migrate", "new", "--sequential", "add_isbn", "-m", files.directory.path], environment: [:])
        #expect(result.status == 1)
        #expect(result.errors.contains("20261125143000_authors.sql is named by a timestamp"), "\(result.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: files.directory.path) == ["20261125143000_authors.sql"])
    }

    /// A dry run with a file it cannot read still shows the SQL of the migrations before it, then names the file.
    @Test func aDryRunWithAnUnreadableFileShowsWhatComesBeforeItAndNamesIt() async throws {
        try await withCLI(["0001_authors.sql": authors, "0002_broken.sql": "-- migrate:up\n-- migrate:up\nSELECT 1;\n"]) {
            cli, _, service in
            let dry = try await cli.run("migrate", "up", "--dry-run")
            #expect(dry.status == 1)
            #expect(dry.output.contains("-- 0001_authors.sql (up)") && dry.output.contains("CREATE TABLE authors"), "\(dry.output)")
            #expect(
                dry.errors.hasPrefix("structpg: 0002_broken.sql:2: a second '-- migrate:up' marker")
                    && dry.errors.contains("`migrate up` applies nothing until it is fixed"), "\(dry.errors)")
            #expect(try await service.query("SELECT to_regclass('authors') IS NULL")[0].decode(Bool.self), "a dry run ran nothing")
        }
    }

    /// What a command printed before it failed comes first, also when both go to one pipe.
    @Test func standardOutputIsFlushedBeforeTheError() async throws {
        try await withCLI(["0001_authors.sql": authors, "0002_broken.sql": "-- migrate:up\nSELECT * FROM missing_table;\n"]) {
            cli, files, _ in
            let shell = try await CLI.run(
                ["-c", "'\(CLI.binary.path)' migrate up -d '\(cli.databaseURL)' -m '\(files.directory.path)' 2>&1"], environment: [:],
                binary: URL(fileURLWithPath: "/bin/sh"))
            let lines = shell.output.split(separator: "\n")
            #expect(
                lines.count == 2 && lines[0].contains("Applied 0001_authors.sql") && lines[1].hasPrefix("structpg: 0002_broken.sql"),
                "\(lines)")
        }
    }
}

enum CLIMessages {
    /// Whether nothing answers on 127.0.0.1:5432.
    static var nothingListensOnTheDefaultPort: Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(5432).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result != 0
    }
}
