import BookstoreAPI
import Foundation
import StructPostgresTesting
import Testing

/// The server's executable runs StructPostgres's command line with the book store's models when given arguments:
/// `BookstoreServer migrate up`, then `BookstoreServer schema verify`, as a deployment script would.
@Suite struct CommandTests {
    @Test func theServerBinaryMigratesThenVerifiesTheSchema() async throws {
        let database = try await TestDatabase.create()
        let before = try await runServerBinary(["schema", "verify"], databaseURL: database.url)
        #expect(before.status == 1)
        #expect(before.output.contains("table 'books' does not exist"), "\(before.output)")

        let up = try await runServerBinary(
            ["migrate", "up", "--migrations-dir", ServerSettings.repositoryMigrations.path], databaseURL: database.url)
        #expect(up.status == 0, "\(up.errors)")
        let verify = try await runServerBinary(["schema", "verify", "--json"], databaseURL: database.url)
        #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
        #expect(verify.output.contains(#""matches" : true"#), "\(verify.output)")
        try await database.drop()
    }
}

/// Runs `.build/<config>/BookstoreServer` (next to the test bundle) and waits for it on a thread of its own.
private func runServerBinary(_ arguments: [String], databaseURL: String) async throws -> (status: Int32, output: String, errors: String) {
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = bundle.deletingLastPathComponent()
    while directory.path != "/", !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("BookstoreServer").path) {
        directory = directory.deletingLastPathComponent()
    }
    let (out, err) = (Pipe(), Pipe())
    let process = Process()
    process.executableURL = directory.appendingPathComponent("BookstoreServer")
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
    environment["DATABASE_URL"] = databaseURL
    process.environment = environment
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let box = UncheckedPipes(process: process, out: out, err: err)
    return await withCheckedContinuation { done in
        Thread.detachNewThread {
            let output = String(decoding: box.out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let errors = String(decoding: box.err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            box.process.waitUntilExit()
            done.resume(returning: (box.process.terminationStatus, output, errors))
        }
    }
}

/// A process and its pipes, handed to the thread that waits for them; nothing else uses them meanwhile.
private struct UncheckedPipes: @unchecked Sendable {
    let process: Process
    let out: Pipe
    let err: Pipe
}
