import BookstoreAPI
import Foundation
import Logging
import BookstoreModels
import StructPostgres
import StructPostgresCommands
import StructPostgresTesting

// The book store as a web service. `DATABASE_URL`, or libpq's PG* variables, say where PostgreSQL is; with neither
// a throwaway local cluster is started and removed on exit. `HOST`, `PORT` (8080) and `MIGRATIONS_DIR` are
// optional. SIGTERM or SIGINT stops it gracefully.
//
// With arguments, it runs the command line of StructPostgres with the book store's models instead:
// `swift run BookstoreServer schema verify`, `swift run BookstoreServer migrate draft add_isbn`, `... migrate up`.
if CommandLine.arguments.count > 1 {
    await StructPG.main(models: BookstoreSchema.models + [BookRecord.self])
    exit(0)
}
var logger = Logger(label: "bookstore-server")
logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
do {
    var cluster: LocalPostgresCluster?
    var connection: ConnectionSettings
    let environment = ProcessInfo.processInfo.environment
    let named = ["DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"].filter {
        environment[$0]?.isEmpty == false
    }
    if !named.isEmpty {
        connection = try ConnectionSettings.fromEnvironment()
        logger.info("connecting as \(named.joined(separator: ", ")) say: \(connection)")
    } else {
        logger.info("no DATABASE_URL nor PGHOST: starting a throwaway PostgreSQL")
        cluster = try LocalPostgresCluster.start()
        connection = cluster!.settings
    }
    defer { cluster?.stop() }
    var configuration = PostgresService.Configuration(connection: connection, logger: logger)
    // Reviews posted or edited at the same moment are written as one statement and one commit, each request
    // still getting its own result or error; a lone request is sent at once.
    configuration.coalescing = WriteCoalescing()
    if let listen = ProcessInfo.processInfo.environment["LISTEN_DATABASE_URL"], !listen.isEmpty {
        configuration.listenerConnection = try ConnectionSettings(url: listen)
    }
    let service = try PostgresService(configuration: configuration)
    let settings = try ServerSettings.fromEnvironment()
    let app = buildApplication(service: service, settings: settings, logger: logger) { port in
        // Written at once (stdout is buffered when it is a file or a pipe): scripts wait for this line.
        FileHandle.standardOutput.write(Data("Listening on http://\(settings.host):\(port)\n".utf8))
    }
    try await app.runService()
} catch {
    FileHandle.standardError.write(Data("bookstore-server: \(error)\n".utf8))
    exit(1)
}
