import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A pg_auto_failover formation on 127.0.0.1 for tests: a monitor and two PostgreSQL nodes (a primary and a
/// synchronous secondary) kept by `pg_autoctl`, as a team running a failover manager has. Started in a temporary
/// folder, as the `postgres` OS user when root; ``stop()`` (or the end of the process) stops it and removes the folder.
///
/// Needs `pg_autoctl` and the `pgautofailover` extension (Debian: `apt-get install -y postgresql-15-auto-failover
/// pg-auto-failover-cli`); ``program`` is `nil` without them.
///
/// ```swift
/// let formation = try LocalAutoFailover.start()
/// defer { formation.stop() }
/// let configuration = PostgresService.Configuration(connection: try ConnectionSettings(url: formation.uri))
/// try await PostgresService.withService(configuration: configuration) { db in     // both nodes, read-write
///     try formation.performFailover()                                              // the secondary takes over
/// }
/// ```
public final class LocalAutoFailover: Sendable {
    /// The formation's URI, as `pg_autoctl show uri` prints it (both nodes, `target_session_attrs=read-write`), with the
    /// user `postgres`.
    public let uri: String
    private let directory: String
    private let osUser: String?
    private let environment: [String]

    /// `pg_autoctl`, when it is installed next to a PostgreSQL with the extension.
    public static var program: String? {
        let candidates =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/pg_autoctl" } + ["/usr/bin/pg_autoctl"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let binaries = try? PostgresBinaries.locate(),
            FileManager.default.fileExists(
                atPath: URL(fileURLWithPath: binaries.directory).deletingLastPathComponent().path + "/lib/pgautofailover.so")
        else { return nil }
        return found
    }

    /// Creates the monitor and the two nodes, and returns once the first is the primary and the second its secondary.
    /// Takes about 10 s.
    public static func start() throws -> LocalAutoFailover {
        guard let program else {
            throw TestDatabaseError("pg_autoctl is not installed: apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli")
        }
        let binaries = try PostgresBinaries.locate()
        let osUser: String? = geteuid() == 0 ? "postgres" : nil
        let directory = try LocalPostgresCluster.makeDirectory(owner: osUser)
        let environment = [
            "PATH=\(binaries.directory):/usr/bin:/bin", "XDG_CONFIG_HOME=\(directory)/config", "XDG_DATA_HOME=\(directory)/share",
            "XDG_RUNTIME_DIR=\(directory)/run", "PG_REGRESS_SOCK_DIR=\(directory)", "PGHOST=\(directory)",
        ]
        Watchdog.start(
            cleanup: """
                for node in node1 node2 monitor; do \(osUser.map { "runuser -u \($0) -- " } ?? "")env \(environment.joined(separator: " ")) '\(program)' stop --immediate --pgdata '\(directory)/'$node >/dev/null 2>&1; done
                rm -rf '\(directory)'
                """)
        let formation = LocalAutoFailover(uri: "", directory: directory, osUser: osUser, environment: environment, program: program)
        do {
            let monitorPort = try LocalPostgresCluster.freePort()
            try formation.autoctl(
                "create", "monitor", "--pgdata", "\(directory)/monitor", "--pgport", "\(monitorPort)",
                "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl")
            try formation.runInBackground("monitor")
            try formation.waitUntilTheMonitorAnswers()
            let monitor = "postgres://autoctl_node@127.0.0.1:\(monitorPort)/pg_auto_failover?sslmode=disable"
            // Alone, the first node is `single`; once the second is a `secondary`, the first is the `primary`.
            for (node, state) in [("node1", "single"), ("node2", "secondary")] {
                try formation.autoctl(
                    "create", "postgres", "--pgdata", "\(directory)/\(node)", "--pgport", "\(try LocalPostgresCluster.freePort())",
                    "--hostname", "127.0.0.1", "--monitor", monitor, "--auth", "trust", "--no-ssl", "--name", node)
                try formation.runInBackground(node)
                try formation.waitUntil(node, is: state)
            }
            try formation.waitUntil("node1", is: "primary")
            let shown = try formation.autoctl("show", "uri", "--formation", "default", "--pgdata", "\(directory)/monitor")
            // The URI names no user: the nodes' superuser, `postgres`, whom they trust on 127.0.0.1.
            let uri = shown.trimmingCharacters(in: .whitespacesAndNewlines)
                .replacingOccurrences(of: "postgres://", with: "postgres://postgres@").replacingOccurrences(
                    of: "sslmode=prefer", with: "sslmode=disable")
            return LocalAutoFailover(
                uri: uri,
                directory: directory, osUser: osUser, environment: environment, program: program)
        } catch {
            formation.stop()
            throw error
        }
    }

    private let program: String

    private init(uri: String, directory: String, osUser: String?, environment: [String], program: String) {
        self.uri = uri
        self.directory = directory
        self.osUser = osUser
        self.environment = environment
        self.program = program
    }

    /// `pg_autoctl perform failover`: the secondary is promoted and the former primary becomes its secondary.
    /// Returns once the monitor reports the new roles.
    public func performFailover() throws {
        try autoctl("perform", "failover", "--pgdata", "\(directory)/monitor")
        try waitUntil("node2", is: "primary")
    }

    /// Stops the monitor and the nodes, and removes their files.
    public func stop() {
        for node in ["node1", "node2", "monitor"] { _ = try? autoctl("stop", "--immediate", "--pgdata", "\(directory)/\(node)") }
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    private func autoctl(_ arguments: String...) throws -> String {
        try Shell.output("env", environment + [program] + arguments, as: osUser)
    }

    /// `pg_autoctl run` for a node, detached, its log in the formation's folder.
    private func runInBackground(_ node: String) throws {
        let command = (["env"] + environment + [program, "run", "--pgdata", "\(directory)/\(node)"]).map { "'\($0)'" }.joined(
            separator: " ")
        try Shell.output("sh", ["-c", "setsid \(command) > '\(directory)/\(node).log' 2>&1 < /dev/null &"], as: osUser)
    }

    private func waitUntilTheMonitorAnswers() throws {
        let deadline = Date().addingTimeInterval(60)
        var failure = ""
        while Date() < deadline {
            do {
                try autoctl("show", "state", "--pgdata", "\(directory)/monitor")
                return
            } catch {
                failure = "\(error)"
                usleep(200_000)
            }
        }
        throw TestDatabaseError("pg_auto_failover: the monitor did not answer within 60 s: \(failure)")
    }

    /// Waits up to 60 s until the monitor reports `node` in `state`.
    private func waitUntil(_ node: String, is state: String) throws {
        let deadline = Date().addingTimeInterval(60)
        var shown = ""
        while Date() < deadline {
            shown = (try? autoctl("show", "state", "--pgdata", "\(directory)/monitor", "--json")) ?? ""
            if let data = shown.data(using: .utf8), let nodes = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]],
                nodes.contains(where: {
                    $0["nodename"] as? String == node && $0["current_group_state"] as? String == state
                        && $0["assigned_group_state"] as? String == state
                })
            {
                return
            }
            usleep(200_000)
        }
        throw TestDatabaseError("pg_auto_failover: \(node) did not become \(state) within 60 s: \(shown)")
    }
}
