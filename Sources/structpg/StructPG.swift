import ArgumentParser
import Foundation
import StructPostgres

/// `structpg`: the migration runner of StructPostgres.
@main
struct StructPG: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "structpg",
        abstract: "Apply and inspect the SQL migrations of a StructPostgres app.",
        discussion: """
            Migrations are files named VERSION_name.sql in --migrations-dir (VERSION a UTC timestamp or NNNN), \
            each with a '-- migrate:up' part and an optional '-- migrate:down' part. The connection comes from \
            --database-url, DATABASE_URL or libpq's PG* variables, also read from ./.env. Exit code 0 means \
            success; anything else prints one line on stderr.
            """,
        version: StructPostgresVersion.current,
        subcommands: [Migrate.self, Database.self, Observe.self, Wait.self])

    /// Like ArgumentParser's, but a bad argument is one line on stderr too, as every other failure.
    static func main() async {
        DotEnv.load()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            let line = message(for: error).split(whereSeparator: \.isNewline).joined(separator: " ")
            FileHandle.standardError.write(Data("structpg: \(line)\n".utf8))
            Foundation.exit(code.rawValue)
        }
    }
}
