import ArgumentParser
import Foundation
import Logging
import StructPostgres

/// Where the database is.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: [.customShort("d"), .customLong("database-url")],
        help: "A postgres:// URL. Default: DATABASE_URL, then the PG* variables (also read from ./.env).")
    var databaseURL: String?

    @Flag(name: .long, help: "Log every statement sent.")
    var verbose = false

    func settings() throws -> ConnectionSettings {
        if let databaseURL {
            Self.configured = true
            return try ConnectionSettings(url: databaseURL, environment: ProcessInfo.processInfo.environment)
        }
        let environment = ProcessInfo.processInfo.environment
        Self.configured =
            environment["DATABASE_URL"]?.isEmpty == false
            || ["PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"].contains { environment[$0]?.isEmpty == false }
        return try ConnectionSettings.fromEnvironment()
    }

    /// Whether the last settings came from a URL or the PG* variables, rather than from defaults alone.
    nonisolated(unsafe) static var configured = true

    var logger: Logger {
        var logger = Logger(label: "structpg")
        logger.logLevel = verbose ? .debug : .critical
        return logger
    }
}

/// Where the migrations are and how to run them.
struct MigrationOptions: ParsableArguments {
    @Option(name: [.customShort("m"), .customLong("migrations-dir")], help: "The folder of the migration files.")
    var migrationsDirectory = "./migrations"

    @Option(name: .customLong("history-table"), help: "The table that records applied migrations.")
    var historyTable = "structpg_migrations"

    @Option(name: .customLong("lock-timeout"), help: "Seconds to wait for another runner's lock.")
    var lockTimeout = 60

    func load() throws -> MigrationSet {
        try MigrationSet(directory: URL(fileURLWithPath: migrationsDirectory))
    }

    /// The migrations that sort before `file` (one that cannot be read), each read on its own: what a dry run shows
    /// before it names the file.
    func load(before file: String) throws -> MigrationSet {
        let directory = URL(fileURLWithPath: migrationsDirectory)
        guard let bad = Migration.parseFileName(file) else { return try MigrationSet([]) }
        let readable = try FileManager.default.contentsOfDirectory(atPath: directory.path).compactMap { name -> Migration? in
            guard let (version, _) = Migration.parseFileName(name), version < bad.version,
                let text = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            else { return nil }
            return try? Migration(fileName: name, text: text)
        }
        return try MigrationSet(readable)
    }
}

/// Runs `body` with a migrator and turns any failure into one line on stderr and exit code 1.
func withMigrator(
    _ connection: ConnectionOptions, _ options: MigrationOptions, dryRun: Bool = false, allowOutOfOrder: Bool = false,
    _ body: (Migrator) async throws -> Void
) async throws {
    try await reportingFailures {
        let migrations: MigrationSet
        var unreadable: StructPostgresError?
        do {
            migrations = try options.load()
        } catch var error as StructPostgresError where dryRun && error.file != nil {
            // A dry run still shows what the files before the one at fault would do, then names it: `migrate up`
            // itself applies nothing while a file cannot be read.
            migrations = try options.load(before: error.file!)
            error.message =
                "\(error.file!)\(error.line.map { ":\($0)" } ?? ""): \(error.message); the SQL above is what the migrations before it "
                + "would run, and `migrate up` applies nothing until it is fixed"
            unreadable = error
        }
        try await withService(connection) { service in
            var migratorOptions = Migrator.Options(
                allowOutOfOrder: allowOutOfOrder, lockTimeout: .seconds(options.lockTimeout),
                historyTable: options.historyTable, dryRun: dryRun)
            if !dryRun {
                // Each step is printed as it completes, so a later failure still shows what went in.
                migratorOptions.progress = { step in
                    let verb = step.direction == .up ? "Applied" : "Reverted"
                    print("\(verb) \(step.migration.fileName) (\(step.milliseconds) ms)")
                }
            }
            let migrator = Migrator(service: service, migrations: migrations, options: migratorOptions)
            try await body(migrator)
        }
        if let unreadable { throw unreadable }
    }
}

/// Runs `body` with a service on the connection the options name (two connections at most).
func withService(_ connection: ConnectionOptions, _ body: (PostgresService) async throws -> Void) async throws {
    let configuration = PostgresService.Configuration(
        connection: try connection.settings(),
        pool: PoolOptions(maxConnections: 2, acquireTimeout: .seconds(15)), logger: connection.logger)
    try await PostgresService.withService(configuration: configuration, body)
}

/// Prints a failure as one line on stderr and exits non-zero.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as StructPostgresError {
        var line = "\(StructPG.commandName): \(error.message)"
        if let file = error.file, !error.message.hasPrefix(file) { line += " (\(file)\(error.line.map { ":\($0)" } ?? ""))" }
        if let state = error.sqlState { line += " [SQLSTATE \(state)]" }
        // PgBouncer reports a database it does not know as a protocol violation (08P01).
        let missingDatabase =
            error.sqlState == "3D000"
            || (error.sqlState == "08P01" && error.message.contains("database") && error.message.contains("does not exist"))
        if missingDatabase { line += "; create it with `\(StructPG.commandName) db create`" }
        if error.code == .connectionLost && !ConnectionOptions.configured {
            line +=
                "; nothing says where the database is, so the defaults were tried: set DATABASE_URL (postgres://USER@HOST:PORT/DATABASE, a password after USER:), pass --database-url, or set PGHOST and PGDATABASE"
        }
        fail(line)
    } catch let error as ExitCode {
        throw error
    } catch {
        fail("\(StructPG.commandName): \(error)")
    }
}

func fail(_ line: String) -> Never {
    // What was printed so far comes first, also when both go to one pipe.
    fflush(nil)
    let oneLine = redactingPasswords(line).split(whereSeparator: \.isNewline).joined(separator: " ")
    FileHandle.standardError.write(Data((oneLine + "\n").utf8))
    exit(1)
}
