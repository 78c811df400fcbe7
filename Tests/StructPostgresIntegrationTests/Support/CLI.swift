import Foundation
import StructPostgres
import StructPostgresTesting

/// Runs the built `structpg` binary as a subprocess.
struct CLI {
    struct Result {
        var status: Int32
        var output: String
        var errors: String
        /// Whether the program was ended by a signal (`status` is then the signal's number).
        var signalled = false
    }

    let databaseURL: String
    let migrations: URL

    /// `.build/<config>/structpg`, next to the test bundle.
    static var binary: URL { product("structpg") }

    /// A built executable of the package, found next to the test bundle.
    static func product(_ name: String) -> URL {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = here.deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return here.deletingLastPathComponent().appendingPathComponent(name)
    }

    func run(_ arguments: String..., environment extra: [String: String] = [:]) async throws -> Result {
        try await Self.run(
            Array(arguments) + ["--migrations-dir", migrations.path], environment: ["DATABASE_URL": databaseURL].merging(extra) { $1 })
    }

    /// Starts the program without reading what it prints (its output files are removed at once: it keeps writing
    /// to them until it exits, and nothing is left in the temporary folder).
    func start(_ arguments: String...) throws -> Process {
        let (process, out, err) = try Self.process(
            Array(arguments) + ["--migrations-dir", migrations.path], environment: ["DATABASE_URL": databaseURL])
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
        return process
    }

    /// Runs the program and waits for it without holding a thread of the test's concurrency pool (a program that
    /// waits for the test process, for a lock or a pooled connection, must not starve it).
    static func run(_ arguments: [String], environment: [String: String], binary: URL = binary, in directory: URL? = nil) async throws
        -> Result
    {
        let (process, out, err) = try process(arguments, environment: environment, binary: binary, in: directory)
        await exit(of: process)
        return Result(
            status: process.terminationStatus, output: read(out), errors: read(err), signalled: process.terminationReason == .uncaughtSignal
        )
    }

    /// Waits until `process` has exited, on a thread of its own: `Process.waitUntilExit()` would block a thread of
    /// the concurrency pool.
    static func exit(of process: Process) async {
        let box = UncheckedProcess(process: process)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                box.process.waitUntilExit()
                done.resume()
            }
        }
    }

    static func process(
        _ arguments: [String], environment: [String: String], binary: URL = binary, in directory: URL? = nil
    ) throws -> (Process, URL, URL) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("structpg-out-\(UUID().uuidString)")
        let err = FileManager.default.temporaryDirectory.appendingPathComponent("structpg-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("PG") || key == "DATABASE_URL" { env[key] = nil }
        process.environment = env.merging(environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out, err)
    }

    static func read(_ url: URL) -> String {
        defer { try? FileManager.default.removeItem(at: url) }
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }
}

/// A temporary directory of migration files.
struct MigrationFiles {
    let directory: URL

    init(_ files: [String: String]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, text) in files { try write(name, text) }
    }

    func write(_ name: String, _ text: String) throws {
        try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// A fresh database and a `structpg` bound to it and to `files`.
func withCLI<T>(_ files: [String: String], _ body: (CLI, MigrationFiles, PostgresService) async throws -> T) async throws -> T {
    let files = try MigrationFiles(files)
    defer { files.remove() }
    let database = try await TestDatabase.create()
    do {
        let configuration = PostgresService.Configuration(connection: database.settings, pool: PoolOptions(maxConnections: 2))
        let result = try await PostgresService.withService(configuration: configuration) { service in
            try await body(CLI(databaseURL: database.url, migrations: files.directory), files, service)
        }
        try await database.drop()
        return result
    } catch {
        try? await Task { try await database.drop() }.value
        throw error
    }
}

/// A `Process` handed to the thread that waits for it; nothing else uses it meanwhile.
private struct UncheckedProcess: @unchecked Sendable {
    let process: Process
}
