import Foundation
import StructPostgres
import StructPostgresVapor
import Vapor

/// Configures the app: the database from the environment, its migrations, the routes.
///
/// `DATABASE_URL` (`postgres://user:password@host:5432/database`), or libpq's `PGHOST`, `PGPORT`, `PGUSER`,
/// `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`; with neither, the app does not start. `MIGRATIONS_DIR` (the
/// repository's `migrations/` by default), `SEED_EXAMPLE=1` writes ``ExampleData``, `LISTEN_DATABASE_URL` names the
/// server itself when `DATABASE_URL` is a transaction pooler.
///
/// - Parameter database: the database to use instead of the environment's (tests pass theirs).
public func configure(_ app: Application, database: ConnectionSettings? = nil) async throws {
    var configuration = PostgresService.Configuration(connection: try database ?? databaseFromEnvironment(), logger: app.logger)
    // Reviews posted at the same moment are written as one statement and one commit, each request still getting its
    // own result or error; a lone request is sent at once.
    configuration.coalescing = WriteCoalescing()
    if let listen = Environment.get("LISTEN_DATABASE_URL"), !listen.isEmpty {
        configuration.listenerConnection = try ConnectionSettings(url: listen)
    }
    try app.structPostgres.use(configuration)

    let migrations = Environment.get("MIGRATIONS_DIR").map { URL(fileURLWithPath: $0) } ?? repositoryMigrations
    let run = try await app.structPostgres.migrate(MigrationSet(directory: migrations))
    app.logger.info("migrations applied", metadata: ["count": "\(run.steps.count)"])
    if Environment.get("SEED_EXAMPLE") == "1" {
        try await PostgresService.withService(configuration: configuration) { try await ExampleData.write($0) }
    }
    try routes(app)
}

/// `DATABASE_URL`, or libpq's `PG*` variables. Neither set is an error that says what to set: this app never falls
/// back to a database of its own.
func databaseFromEnvironment() throws -> ConnectionSettings {
    let names = [
        "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSSLMODE",
        "PGSSLROOTCERT", "PGAPPNAME", "PGCONNECT_TIMEOUT", "PGSERVICE",
    ]
    let environment = names.reduce(into: [String: String]()) { found, name in
        if let value = Environment.get(name), !value.isEmpty { found[name] = value }
    }
    let naming = ["DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"]
    guard naming.contains(where: { environment[$0] != nil }) else {
        throw ConfigurationError(
            """
            no database: set DATABASE_URL (postgres://user:password@host:5432/database) or libpq's PGHOST, PGUSER, \
            PGDATABASE... (scripts/demo.sh --vapor starts a throwaway one)
            """)
    }
    return try ConnectionSettings.fromEnvironment(environment)
}

/// `migrations/` at the root of the repository this package sits in.
let repositoryMigrations = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("../../../../migrations").standardized

/// A configuration mistake, said plainly.
struct ConfigurationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
