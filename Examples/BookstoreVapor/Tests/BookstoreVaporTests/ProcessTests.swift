@testable import BookstoreVapor
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

/// The built executable, as a deployment runs it: StructPostgres's commands, a start without a database, and Ctrl-C
/// (SIGINT) with a live client connected.
@Suite struct ProcessTests {
    @Test func theBinaryMigratesThenVerifiesTheSchema() async throws {
        let database = try await TestDatabase.create()
        let before = try await AppProcess.run(["schema", "verify"], databaseURL: database.url)
        #expect(before.status == 1)
        #expect(before.output.contains("table 'books' does not exist"), "\(before.output)")

        let up = try await AppProcess.run(["migrate", "up", "--migrations-dir", repositoryMigrations.path], databaseURL: database.url)
        #expect(up.status == 0, "\(up.errors)")
        let verify = try await AppProcess.run(["schema", "verify", "--json"], databaseURL: database.url)
        #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
        #expect(verify.output.contains(#""matches" : true"#), "\(verify.output)")
        try await database.drop()
    }

    @Test func withoutADatabaseItStopsSayingWhatToSet() async throws {
        let run = try await AppProcess.run(["serve", "--port", "0"], databaseURL: nil)
        #expect(run.status == 1)
        #expect((run.output + run.errors).contains("no database: set DATABASE_URL"), "\(run.output) \(run.errors)")
        #expect(!(run.output + run.errors).contains("Server started"))
    }

    /// SIGINT, as Ctrl-C sends it, while a client reads the live route: the process ends within 2 s, with status 0,
    /// and the client's response ends.
    @Test func ctrlCWithALiveClientEndsTheAppWithinTwoSeconds() async throws {
        let database = try await TestDatabase.create()
        let app = try AppProcess.start(["serve", "--hostname", "127.0.0.1", "--port", "0"], databaseURL: database.url, seed: true)
        let port = try await app.waitForPort()
        let book = "00000000-0000-4000-8000-000000000101"
        let response = Mutex<(Int, String)?>(nil)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/books/\(book)/reviews/live")!)
        request.timeoutInterval = 60
        URLSession.shared.dataTask(with: request) { data, answer, _ in
            response.withLock { $0 = ((answer as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data ?? Data(), as: UTF8.self)) }
        }.resume()
        try await waitForListener(on: database)

        let stopping = ContinuousClock.now
        app.process.interrupt()
        let status = await app.exit()
        let took = ContinuousClock.now - stopping
        #expect(took < .seconds(2), "the app stopped after \(took)")
        #expect(status == 0, "\(app.output)")
        for _ in 0..<250 where response.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(20)) }
        let (code, events) = try #require(response.withLock { $0 })
        #expect(code == 200 && events.hasPrefix("event: reviews"), "\(code) \(events)")
        try await database.drop()
    }
}

/// Waits until a live route's observer listens on `database` (it has subscribed), then for its first event.
private func waitForListener(on database: TestDatabase) async throws {
    try await PostgresService.withService(configuration: .init(connection: database.settings, pool: PoolOptions(maxConnections: 1))) {
        try await waitForListener($0)
    }
}

/// `.build/<config>/BookstoreVapor` (next to the test bundle), run with `databaseURL` (or none: no `PG*` either).
final class AppProcess {
    let process: Process
    private let collected = Output()
    private let ended: Task<Int32, Never>

    var output: String { collected.text.withLock { $0 } }

    private init(process: Process, out: Pipe) {
        self.process = process
        let collected = collected
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { collected.text.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        }
        let box = UncheckedProcess(process: process)
        ended = Task {
            await withCheckedContinuation { done in
                Thread.detachNewThread {
                    box.process.waitUntilExit()
                    done.resume()
                }
            }
            return box.process.terminationStatus
        }
    }

    /// Starts the app; its standard output and error are collected together.
    static func start(_ arguments: [String], databaseURL: String?, seed: Bool = false) throws -> AppProcess {
        let out = Pipe()
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") && $0.key != "DATABASE_URL" }
        environment["DATABASE_URL"] = databaseURL
        environment["LOG_LEVEL"] = "info"
        if seed { environment["SEED_EXAMPLE"] = "1" }
        process.environment = environment
        process.standardOutput = out
        process.standardError = out
        try process.run()
        return AppProcess(process: process, out: out)
    }

    /// Runs the app to its end.
    static func run(_ arguments: [String], databaseURL: String?) async throws -> (status: Int32, output: String, errors: String) {
        let app = try start(arguments, databaseURL: databaseURL)
        let status = await app.exit()
        return (status, app.output, "")
    }

    /// The exit status, once the process has ended.
    func exit() async -> Int32 {
        let status = await ended.value
        try? await Task.sleep(for: .milliseconds(50))
        return status
    }

    /// Waits for `text` in the output (30 s at most).
    func waitForOutput(_ text: String) async throws {
        for _ in 0..<1_500 {
            if output.contains(text) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("no '\(text)' in the output within 30 s: \(output)")
    }

    /// The port of Vapor's "Server started on http://127.0.0.1:PORT".
    func waitForPort() async throws -> Int {
        try await waitForOutput("Server started on http://127.0.0.1:")
        let tail = output.components(separatedBy: "Server started on http://127.0.0.1:")[1]
        return try #require(Int(tail.prefix { $0.isNumber }))
    }

    private static func executable() throws -> URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        while directory.path != "/", !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("BookstoreVapor").path)
        {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("BookstoreVapor")
    }
}

/// What a process printed so far.
private final class Output: Sendable {
    let text = Mutex("")
}

/// A process handed to the thread that waits for it; nothing else waits on it meanwhile.
private struct UncheckedProcess: @unchecked Sendable {
    let process: Process
}
