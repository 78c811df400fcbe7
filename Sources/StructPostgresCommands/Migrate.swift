import ArgumentParser
import Foundation
import StructPostgres

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply, revert and inspect migrations.",
        subcommands: [Up.self, Down.self, Status.self, New.self, Draft.self, Verify.self, Redo.self, Repair.self, Baseline.self, Dump.self])

    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apply pending migrations, up to the latest or --to.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions
        @Option(help: "Stop after this version.") var to: Int64?
        @Flag(help: "Print the SQL that would run, and run nothing.") var dryRun = false
        @Flag(help: "Apply pending migrations older than the newest applied one.") var allowOutOfOrder = false

        func run() async throws {
            try await withMigrator(connection, options, dryRun: dryRun, allowOutOfOrder: allowOutOfOrder) { migrator in
                report(try await migrator.migrate(to: to), dryRun: dryRun, nothing: "Nothing to apply: the database is up to date.")
            }
        }
    }

    struct Down: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revert the newest applied migrations with their down parts.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions
        @Option(help: "How many migrations to revert.") var steps = 1
        @Flag(help: "Print the SQL that would run, and run nothing.") var dryRun = false

        func validate() throws {
            guard steps >= 1 else { throw ValidationError("--steps must be at least 1") }
        }

        func run() async throws {
            try await withMigrator(connection, options, dryRun: dryRun) { migrator in
                report(try await migrator.rollback(steps: steps), dryRun: dryRun, nothing: "Nothing to revert.")
            }
        }
    }

    struct Redo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revert the newest applied migration and apply it again.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions

        func run() async throws {
            try await withMigrator(connection, options) { migrator in
                report(try await migrator.redo(), dryRun: false, nothing: "Nothing to redo.")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show every migration and whether it is applied.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions
        @Flag(help: "Print JSON instead of a table.") var json = false

        func run() async throws {
            try await withMigrator(connection, options) { migrator in
                let rows = try await migrator.status()
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    encoder.dateEncodingStrategy = .iso8601
                    print(String(decoding: try encoder.encode(rows), as: UTF8.self))
                } else {
                    print(StatusTable.render(rows))
                }
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check applied migrations against their files and list pending ones, without applying anything.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions

        func run() async throws {
            try await withMigrator(connection, options) { migrator in
                let pending = try await migrator.verify()
                print("Checksums match the applied migrations.")
                print(pending.isEmpty ? "No pending migrations." : "Pending: " + pending.map(\.fileName).joined(separator: ", "))
            }
        }
    }

    struct Repair: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept changed files, forget missing ones and clear failed migrations.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions
        @Option(help: "Only this version.") var accept: Int64?

        func run() async throws {
            try await withMigrator(connection, options) { migrator in
                let actions = try await migrator.repair(accept: accept)
                print(actions.isEmpty ? "Nothing to repair." : actions.joined(separator: "\n"))
            }
        }
    }

    struct Baseline: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Adopt an existing database: record migrations up to VERSION as applied, without running them.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions
        @Argument(help: "The newest migration the database already has.") var version: Int64

        func run() async throws {
            try await withMigrator(connection, options) { migrator in
                try await migrator.baseline(version)
                print("Baselined at version \(version).")
            }
        }
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a migration file from a template, named by the current UTC time (or --sequential).",
            discussion: """
                A name like 20261125143000_add_isbn.sql does not collide with one made on another branch. \
                NNNN_ names keep working, and a folder may mix both: versions sort as numbers.
                """)
        @OptionGroup var options: MigrationOptions
        @Argument(help: "What the migration does, e.g. add_isbn_to_books.") var name: String
        @Flag(help: "Number the file after the highest version in the folder (0008_name.sql) instead.") var sequential = false

        func validate() throws {
            try Self.validate(name: name)
        }

        static func validate(name: String) throws {
            guard Migration.parseFileName("0_\(name).sql") != nil else {
                throw ValidationError("'\(name)' must hold only ASCII letters, digits, '_' and '-'")
            }
        }

        func run() async throws {
            try await reportingFailures {
                let template = """
                    -- migrate:up


                    -- migrate:down

                    """
                let url = try Self.reserve([name], in: options.migrationsDirectory, sequential: sequential)[0]
                try template.write(to: url, atomically: true, encoding: .utf8)
                print(url.path)
            }
        }

        /// The files for the next migrations named `names`, in order, in `folder` (created if missing): refuses a
        /// name that exists already, and `sequential` in a folder named by timestamps.
        static func reserve(_ names: [String], in folder: String, sequential: Bool) throws -> [URL] {
            let directory = URL(fileURLWithPath: folder)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var versions = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                .compactMap { name in Migration.parseFileName(name).map { (name, $0.0) } }
            if sequential, let newest = versions.max(by: { $0.1 < $1.1 }), newest.1 > 99_999_999 {
                throw StructPostgresError(
                    .migrationRefused,
                    "--sequential numbers a migration after the newest in the folder, but \(newest.0) is named by a timestamp: a number after it would look like one. Leave out --sequential to name it by the time, as the folder's other files"
                )
            }
            return try names.map { name in
                let fileName = sequential ? sequentialName(name, after: versions) : timestampName(name, after: versions.map(\.1))
                let url = directory.appendingPathComponent(fileName)
                guard !FileManager.default.fileExists(atPath: url.path) else {
                    throw StructPostgresError(.migrationRefused, "\(fileName) exists already")
                }
                versions.append((fileName, Migration.parseFileName(fileName)!.0))
                return url
            }
        }

        /// `20261125143000_name.sql`: now in UTC, or one second after the newest version if that is later.
        static func timestampName(_ name: String, after versions: [Int64]) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date())
            var version =
                Int64(parts.year!) * 10_000_000_000 + Int64(parts.month!) * 100_000_000 + Int64(parts.day!) * 1_000_000
                + Int64(parts.hour!) * 10_000 + Int64(parts.minute!) * 100 + Int64(parts.second!)
            if let newest = versions.max(), newest >= version { version = newest + 1 }
            return "\(version)_\(name).sql"
        }

        /// `0008_name.sql`: one above the highest version, as wide as the widest sequential name.
        static func sequentialName(_ name: String, after versions: [(String, Int64)]) -> String {
            let next = (versions.map(\.1).max() ?? 0) + 1
            let width = max(4, versions.map { $0.0.prefix { $0 != "_" }.count }.max() ?? 4)
            let digits = String(next)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits + "_\(name).sql"
        }
    }

    struct Dump: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the database's schema as pg_dump --schema-only does (needs pg_dump on the PATH).")
        @OptionGroup var connection: ConnectionOptions
        @Option(name: [.customShort("o"), .long], help: "The file to write.") var output = "schema.sql"

        func run() async throws {
            try await reportingFailures {
                let settings = try connection.settings()
                try SchemaDump.write(settings, to: URL(fileURLWithPath: output))
                print(URL(fileURLWithPath: output).path)
            }
        }
    }
}

/// Prints what a run did, or in a dry run the SQL it would send.
func report(_ run: MigrationRun, dryRun: Bool, nothing: String) {
    guard !run.steps.isEmpty else {
        print(nothing)
        return
    }
    for step in run.steps where dryRun {
        print("-- \(step.migration.fileName) (\(step.direction.rawValue))\n\(step.sql)\n")
    }
}
