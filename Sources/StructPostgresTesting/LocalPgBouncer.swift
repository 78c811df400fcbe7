import Foundation
import StructPostgres

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PgBouncer in `pool_mode = transaction` in front of a ``LocalPostgresCluster``, on 127.0.0.1 and a
/// free port, with SCRAM authentication as hosted poolers have. Stopped by ``stop()``, and also when the process
/// that started it ends (a watchdog stops it).
///
/// Needs the `pgbouncer` program (Debian: `apt-get install -y pgbouncer`; `scripts/ensure-postgres.sh --pgbouncer`
/// installs it). When running as root, it runs as the `postgres` OS user, since PgBouncer refuses root.
public final class LocalPgBouncer: Sendable {
    /// Settings of the cluster's superuser through the pooler, on the `postgres` database, with
    /// ``ConnectionSettings/poolMode`` `.transaction`.
    public let settings: ConnectionSettings
    let directory: String

    /// The `pgbouncer` program, or `nil` when it is not installed.
    public static var program: String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (path + ["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"]).map { $0 + "/pgbouncer" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a PgBouncer in front of `cluster`; `poolSize`: server connections per database,
    /// `maxServerConnections`: in all (a local cluster allows 600, shared with the tests' direct connections).
    public static func start(in front: LocalPostgresCluster, poolSize: Int = 20, maxServerConnections: Int = 250) throws -> LocalPgBouncer {
        guard let program else {
            throw TestDatabaseError("pgbouncer is not installed: apt-get install -y pgbouncer (or scripts/ensure-postgres.sh --pgbouncer)")
        }
        let osUser: String? = geteuid() == 0 ? "postgres" : nil
        let directory = try LocalPostgresCluster.makeDirectory(owner: osUser)
        let server = front.settings
        let port = try LocalPostgresCluster.freePort()
        let quote = { (text: String) in "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        try "\(quote(server.user)) \(quote(server.password ?? ""))\n".write(
            toFile: directory + "/userlist.txt", atomically: true, encoding: .utf8)
        try """
        [databases]
        * = host=\(server.host) port=\(server.port)

        [pgbouncer]
        listen_addr = 127.0.0.1
        listen_port = \(port)
        unix_socket_dir =
        auth_type = scram-sha-256
        auth_file = \(directory)/userlist.txt
        pool_mode = transaction
        max_client_conn = 1000
        default_pool_size = \(poolSize)
        max_user_connections = \(maxServerConnections)
        server_idle_timeout = 1
        server_reset_query =
        ignore_startup_parameters = extra_float_digits
        logfile = \(directory)/pgbouncer.log
        pidfile = \(directory)/pgbouncer.pid

        """.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
        if let osUser { try Shell.output("chown", ["-R", osUser, directory]) }
        try Shell.output("chmod", ["600", directory + "/userlist.txt"])
        do {
            try Shell.output(program, ["-d", directory + "/pgbouncer.ini"], as: osUser)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        startWatchdog(directory: directory)
        var settings = server
        settings.port = port
        settings.poolMode = .transaction
        let bouncer = LocalPgBouncer(settings: settings, directory: directory)
        try bouncer.waitUntilListening(port: port)
        return bouncer
    }

    private init(settings: ConnectionSettings, directory: String) {
        self.settings = settings
        self.directory = directory
    }

    /// Stops PgBouncer and deletes its directory.
    public func stop() {
        if let pid = pid { kill(pid, SIGTERM) }
        for _ in 0..<50 where pid.map({ kill($0, 0) == 0 }) == true { usleep(20_000) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// PgBouncer's log so far, for diagnosing a failed test.
    public var log: String { (try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? "" }

    private var pid: pid_t? {
        (try? String(contentsOfFile: directory + "/pgbouncer.pid", encoding: .utf8))
            .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    private func waitUntilListening(port: Int) throws {
        for _ in 0..<250 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return }
            usleep(20_000)
        }
        throw TestDatabaseError("pgbouncer did not listen on 127.0.0.1:\(port) within 5 s: \(log)")
    }

    /// Stops PgBouncer and removes its files once this process has ended, whatever way it ends.
    private static func startWatchdog(directory: String) {
        Watchdog.start(
            cleanup: """
                kill "$(cat '\(directory)/pgbouncer.pid' 2>/dev/null)" 2>/dev/null
                sleep 1
                rm -rf '\(directory)'
                """)
    }
}
