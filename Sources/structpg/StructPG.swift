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
            // ArgumentParser quotes a misplaced argument ("Unexpected argument 'postgres://app:secret@db/shop'").
            let line = redactingPasswords(message(for: error)).split(whereSeparator: \.isNewline).joined(separator: " ")
            FileHandle.standardError.write(Data("structpg: \(line)\n".utf8))
            Foundation.exit(code.rawValue)
        }
    }
}

/// `text` with the password of every URL (`postgres://app:****@db/shop`) and of every `password=` setting
/// masked, so that no message echoing an argument shows one.
func redactingPasswords(_ text: String) -> String {
    let patterns = [#"([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@']*:)\S*@"#, #"(password\s*=\s*)('[^']*'|\S+)"#]
    var result = text
    for pattern in patterns {
        let expression = try! NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
        let range = NSRange(result.startIndex..., in: result)
        result = expression.stringByReplacingMatches(in: result, range: range, withTemplate: pattern.hasPrefix("(password") ? "$1****" : "$1****@")
    }
    return result
}
