import Foundation

#if canImport(Glibc)
import Glibc
#endif

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
        for directory in candidates
        where FileManager.default.isExecutableFile(atPath: directory + "/initdb")
            && FileManager.default.isExecutableFile(atPath: directory + "/pg_ctl")
        {
            return PostgresBinaries(directory: directory)
        }
        throw TestDatabaseError(
            "PostgreSQL server programs (initdb, pg_ctl) not found. Install them (apt-get install -y postgresql), "
                + "set PG_BINDIR to their folder, or set DATABASE_URL to a server to use.")
    }
}

/// An error of the test harness, with what to do about it.
public struct TestDatabaseError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, and what to do about it.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Runs programs and collects their output.
///
/// Uses `posix_spawn` and `waitpid` rather than `Foundation.Process`: `pg_ctl start` leaves a server
/// running that inherits the child's descriptors, and `Process` then never reports the exit.
enum Shell {
    @discardableResult
    static func output(_ program: String, _ arguments: [String], as user: String? = nil) throws -> String {
        var command = [program] + arguments
        if let user { command = ["runuser", "-u", user, "--"] + command }
        let outputPath = NSTemporaryDirectory() + "structpg-output-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = (["/usr/bin/env"] + command).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // The calling thread may block signals (Dispatch's do): the child must not inherit that, or a server
        // that relies on SIGTERM (PgBouncer) could never be stopped.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, &attributes, argv, environ)
        guard spawned == 0 else {
            throw TestDatabaseError("cannot start \(command.joined(separator: " ")): error \(spawned)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exitCode = (status >> 8) & 0xff
        guard status & 0x7f == 0, exitCode == 0 else {
            throw TestDatabaseError("\(command.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }
}

/// Cleans up after this process whatever way it ends: a detached shell waits for the process to be gone, then runs
/// `cleanup` (stop a server, remove its files).
enum Watchdog {
    static func start(cleanup: String) {
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            \(cleanup)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["setsid", "sh", "-c", script]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }
}
