import Foundation
import StructPostgres

/// `pg_dump --schema-only` of the database, written to a file.
enum SchemaDump {
    static func write(_ settings: ConnectionSettings, to file: URL) throws {
        guard let pgDump = findExecutable("pg_dump") else {
            throw StructPostgresError(
                .invalidConfiguration,
                "pg_dump was not found on the PATH; install PostgreSQL's client programs (apt-get install postgresql-client, brew install libpq)"
            )
        }
        let process = Process()
        process.executableURL = pgDump
        process.arguments = [
            "--schema-only", "--no-owner", "--no-privileges", "--file", file.path,
            "--host", settings.host, "--port", String(settings.port), "--username", settings.user, "--dbname", settings.database,
        ]
        // The password travels in the environment, never on the command line where `ps` shows it.
        var environment = ProcessInfo.processInfo.environment
        environment["PGPASSWORD"] = settings.password
        environment["PGSSLMODE"] = settings.sslMode.rawValue
        environment["PGSSLROOTCERT"] = settings.sslRootCert
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw StructPostgresError(.server, "pg_dump failed: \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    static func findExecutable(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
