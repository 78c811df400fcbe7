import BookstoreModels
import Foundation
import Logging
import StructPostgres
import StructPostgresCommands
import StructPostgresTesting

/// The example app: writes the book store of the StructCoreData demo to PostgreSQL and reads it back.
///
/// Uses `DATABASE_URL` when set; otherwise starts a throwaway PostgreSQL and stops it at the end. Behind a
/// transaction pooler (`pool_mode=transaction`), `LISTEN_DATABASE_URL` gives the server's own address for the live view.
///
/// With arguments it runs the command line of StructPostgres with the book store's models instead:
/// `swift run Bookstore schema verify`, `swift run Bookstore migrate draft add_isbn`, `swift run Bookstore migrate up`.
@main
struct BookstoreApp {
    static func main() async {
        if CommandLine.arguments.count > 1 {
            await StructPG.main(models: BookstoreSchema.models)
            return
        }
        do {
            try await run()
        } catch {
            FileHandle.standardError.write(Data("bookstore: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws {
        var cluster: LocalPostgresCluster?
        let settings: ConnectionSettings
        if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty {
            settings = try ConnectionSettings.fromEnvironment()
            print("Using the database of DATABASE_URL: \(settings)")
        } else {
            print("Starting a throwaway PostgreSQL...")
            let local = try LocalPostgresCluster.start()
            cluster = local
            settings = local.settings
        }
        defer { cluster?.stop() }

        var logger = Logger(label: "bookstore")
        logger.logLevel = .warning
        var configuration = PostgresService.Configuration(connection: settings, logger: logger)
        if let listen = ProcessInfo.processInfo.environment["LISTEN_DATABASE_URL"], !listen.isEmpty {
            configuration.listenerConnection = try ConnectionSettings(url: listen)
        }
        try await PostgresService.withService(configuration: configuration) { service in
            let migrator = Migrator(service: service, migrations: try MigrationSet(directory: repositoryDirectory("migrations")))
            let run = try await migrator.migrate()
            print(
                run.steps.isEmpty
                    ? "Migrations: the database is up to date."
                    : "Migrations applied: " + run.steps.map(\.migration.fileName).joined(separator: ", "))
            try await Demo(service: service).run()
        }
    }

    /// A folder of the package (`migrations`, `fixtures`), found from the working directory or this source file.
    static func repositoryDirectory(_ name: String) -> URL {
        let candidates = [
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(name),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../\(name)").standardized,
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) } ?? candidates[0]
    }
}
