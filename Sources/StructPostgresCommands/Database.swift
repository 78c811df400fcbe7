import ArgumentParser
import Foundation
import StructPostgres

struct Database: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "Create or drop the database the URL names.", subcommands: [Create.self, Drop.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the database the URL names, connecting to the server's 'postgres' database to do it.")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await reportingFailures {
                let name = try await withMaintenance(connection) { service, database in
                    try await service.execute(unsafeSQL: "CREATE DATABASE \(quoted(database))")
                    return database
                }
                print("Created database \(name).")
            }
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop the database the URL names (its connections must be closed first).")
        @OptionGroup var connection: ConnectionOptions
        @Flag(help: "Succeed when the database does not exist.") var ifExists = false

        func run() async throws {
            try await reportingFailures {
                let (name, existed) = try await withMaintenance(connection) { service, database in
                    let rows = try await service.query("SELECT 1 FROM pg_database WHERE datname = \(database)")
                    guard !rows.isEmpty || !ifExists else { return (database, false) }
                    try await service.execute(unsafeSQL: "DROP DATABASE \(quoted(database))")
                    return (database, true)
                }
                print(existed ? "Dropped database \(name)." : "Database \(name) does not exist: nothing to drop.")
            }
        }
    }
}

/// Runs `body` on the server's `postgres` database (a database cannot create or drop itself), with the name of the
/// database the URL names.
private func withMaintenance<T>(
    _ connection: ConnectionOptions, _ body: (PostgresService, String) async throws -> T
) async throws -> T {
    var settings = try connection.settings()
    let database = settings.database
    settings.database = database == "postgres" ? "template1" : "postgres"
    let configuration = PostgresService.Configuration(
        connection: settings, pool: PoolOptions(maxConnections: 1, acquireTimeout: .seconds(15)), logger: connection.logger)
    return try await PostgresService.withService(configuration: configuration) { try await body($0, database) }
}

private func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
