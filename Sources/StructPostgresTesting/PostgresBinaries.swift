import Foundation

/// Finds the PostgreSQL server programs (`initdb`, `pg_ctl`, `postgres`) on this machine.
struct PostgresBinaries: Sendable {
    let directory: String

    var initdb: String { directory + "/initdb" }
    var pgCtl: String { directory + "/pg_ctl" }

    /// `PG_BINDIR`, then `pg_config --bindir`, then Debian's `/usr/lib/postgresql/<newest>/bin`, then `PATH`.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresBinaries {
        var candidates: [String] = []
        if let explicit = environment["PG_BINDIR"] { candidates.append(explicit) }
        if let configured = try? Shell.output("pg_config", ["--bindir"]) {
            candidates.append(configured.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let debian = "/usr/lib/postgresql"
        if let versions = try? FileManager.default.contentsOfDirectory(atPath: debian) {
            let sorted = versions.compactMap { Int($0) }.sorted(by: >)
            candidates += sorted.map { "\(debian)/\($0)/bin" }
        }
        candidates += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for directory in candidates where FileManager.default.isExecutableFile(atPath: directory + "/initdb")
            && FileManager.default.isExecutableFile(atPath: directory + "/pg_ctl") {
            return PostgresBinaries(directory: directory)
        }
        throw TestDatabaseError(
            "PostgreSQL server programs (initdb, pg_ctl) not found. Install them (apt-get install -y postgresql), "
                + "set PG_BINDIR to their folder, or set DATABASE_URL to a server to use.")
    }
}

/// An error of the test harness, with what to do about it.
public struct TestDatabaseError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Runs programs and collects their output.
enum Shell {
    @discardableResult
    static func output(_ program: String, _ arguments: [String], as user: String? = nil) throws -> String {
        let process = Process()
        var command = [program] + arguments
        if let user { command = ["runuser", "-u", user, "--"] + command }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw TestDatabaseError("\(command.joined(separator: " ")) failed (exit \(process.terminationStatus)): \(text)")
        }
        return text
    }
}
