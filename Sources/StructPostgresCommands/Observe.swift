import ArgumentParser
import Foundation
import StructPostgres

struct Observe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set up change notifications, which service.observe(...) and service.changes(in:) listen to.",
        subcommands: [Add.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a migration that installs change-notification triggers on TABLES.")
        @OptionGroup var options: MigrationOptions
        @Argument(help: "The tables, e.g. books reviews (schema-qualified where needed: inventory.books).") var tables: [String]
        @Flag(help: "Notifications also carry the changed rows' count and primary keys (costs every write more).") var keys = false

        func run() async throws {
            try await reportingFailures {
                print(
                    try writeMigration(
                        named: "observe", tables: tables, text: ChangeNotifications.migration(tables: tables, keys: keys), options))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a migration that removes the change-notification triggers from TABLES.")
        @OptionGroup var options: MigrationOptions
        @Argument(help: "The tables.") var tables: [String]

        func run() async throws {
            try await reportingFailures {
                let text =
                    "-- migrate:up\n\(ChangeNotifications.uninstallSQL(tables: tables))\n\n-- migrate:down\n\(ChangeNotifications.installSQL(tables: tables))\n"
                print(try writeMigration(named: "unobserve", tables: tables, text: text, options))
            }
        }
    }
}

/// Writes a migration `VERSION_<verb>_<tables>.sql` with `text` into the migrations folder; returns its path.
private func writeMigration(named verb: String, tables: [String], text: String, _ options: MigrationOptions) throws -> String {
    guard !tables.isEmpty else { throw ValidationError("name at least one table") }
    let directory = URL(fileURLWithPath: options.migrationsDirectory)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let versions = try FileManager.default.contentsOfDirectory(atPath: directory.path).compactMap { Migration.parseFileName($0)?.version }
    let name = ([verb] + tables.map { $0.replacingOccurrences(of: ".", with: "_") }).joined(separator: "_")
    guard Migration.parseFileName("0_\(name).sql") != nil else {
        throw ValidationError("table names must hold only letters, digits, '_', '-' and '.'")
    }
    let url = directory.appendingPathComponent(Migrate.New.timestampName(name, after: versions))
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url.path
}
