import ArgumentParser
import Foundation
import StructPostgres

/// The command line of StructPostgres: `structpg`, the migration runner, and the same commands inside an app's own
/// executable, where they also see the app's models (`schema verify`, `migrate draft`).
///
/// The `structpg` binary cannot see an app's Swift types. An app that wants the model commands gives its executable
/// (or a small one of its own) a `main` that names its models, as Vapor apps run `migrate` through their own binary:
///
/// ```swift
/// import StructPostgresCommands
///
/// @main struct BookstoreCommands {
///     static func main() async {
///         await StructPG.main(models: [BookModel.self, ReviewModel.self, UserModel.self])
///     }
/// }
/// ```
///
/// Then `swift run BookstoreCommands schema verify` exits 0 when the models and the database agree and 1 with
/// every mismatch otherwise, and `swift run BookstoreCommands migrate draft add_isbn` writes the next migration
/// file with what the models need. Every `structpg` command works there too.
public struct StructPG: AsyncParsableCommand {
    /// The command's name, description and subcommands.
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: commandName,
            abstract:
                "Apply and inspect the SQL migrations of a StructPostgres app\(models.isEmpty ? "" : ", and check its models against the database").",
            discussion: """
                Migrations are files named VERSION_name.sql in --migrations-dir (VERSION a UTC timestamp or NNNN), \
                each with a '-- migrate:up' part and an optional '-- migrate:down' part. The connection comes from \
                --database-url, DATABASE_URL or libpq's PG* variables, also read from ./.env. Exit code 0 means \
                success; anything else prints one line on stderr.
                """,
            version: StructPostgresVersion.current,
            subcommands: [Migrate.self, Schema.self, Database.self, Observe.self, Wait.self])
    }

    /// The models of the app whose executable runs the commands (none in the `structpg` binary).
    @TaskLocal static var models: [any EntityConvertible.Type] = []

    /// The name the command is known by in help and error lines: `structpg`, or the app's executable.
    @TaskLocal static var commandName = "structpg"

    /// Creates the command (ArgumentParser does, from the arguments).
    public init() {}

    /// Runs the command line of `structpg` with an app's models, from the app's own executable: `schema verify`
    /// and `migrate draft NAME` compare them with the database. Returns when the command succeeded; exits the
    /// process with a non-zero status, after one line on stderr, when it failed.
    ///
    /// - Parameters:
    ///   - models: every model the app stores (a `StoredModel`, or an `EntityProtocol`'s model); the `structpg`
    ///     binary passes none.
    ///   - arguments: the command line without the executable's name; the process's own by default.
    public static func main(models: [any EntityConvertible.Type], arguments: [String]? = nil) async {
        let executable = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "structpg"
        await $commandName.withValue(executable) {
            await $models.withValue(models) { await run(arguments) }
        }
    }

    /// Runs the command line without an app's models, as the `structpg` binary does: the same as
    /// `await StructPG.main(models: [])`.
    ///
    /// ```swift
    /// await StructPG.main()
    /// ```
    public static func main() async {
        await main(models: [])
    }

    /// Runs the command line without an app's models, from synchronous code such as a `main` that is not `async`:
    /// it waits for the commands, which run on Swift's concurrency threads. From `async` code, call
    /// `await StructPG.main()`.
    ///
    /// ArgumentParser's own synchronous `main()` cannot run an asynchronous command: in a debug build it stopped with a
    /// message asking for an availability annotation, which is beside the point on Linux.
    @available(*, noasync, message: "call await StructPG.main() from async code")
    public static func main() {
        let done = DispatchSemaphore(value: 0)
        Task {
            await main(models: [])
            done.signal()
        }
        done.wait()
    }

    /// Parses and runs, as ArgumentParser's `main()` does, but a bad argument is one line on stderr too, as every
    /// other failure.
    private static func run(_ arguments: [String]?) async {
        DotEnv.load()
        do {
            var command = try parseAsRoot(arguments)
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
            FileHandle.standardError.write(Data("\(commandName): \(line)\n".utf8))
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
        result = expression.stringByReplacingMatches(
            in: result, range: range, withTemplate: pattern.hasPrefix("(password") ? "$1****" : "$1****@")
    }
    return result
}
