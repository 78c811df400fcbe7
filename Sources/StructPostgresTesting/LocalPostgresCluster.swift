import Foundation
import StructPostgres

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster: created in a temporary directory, listening on 127.0.0.1 and a
/// free port, removed by ``stop()``, and also when the process that started it ends in any way
/// (a watchdog process stops it once this process is gone).
///
/// When running as root, the cluster runs as the `postgres` OS user, since `initdb` refuses root.
public final class LocalPostgresCluster: Sendable {
    /// Settings of the superuser `postgres` on the `postgres` database.
    public let settings: ConnectionSettings
    let directory: String
    let binaries: PostgresBinaries
    let osUser: String?
    /// The network namespace the server runs in (see ``SilentlyCuttableCluster``); `nil`: this machine's.
    let namespace: String?

    /// Creates and starts a cluster. Takes a few seconds. `durable`: with PostgreSQL's default durability (every
    /// commit waits for the disk); otherwise `fsync`, `synchronous_commit` and `full_page_writes` are off, as a
    /// throwaway server can afford.
    public static func start(durable: Bool = false) throws -> LocalPostgresCluster {
        try start(durable: durable, listening: nil)
    }

    /// Creates and starts a cluster whose server runs in network namespace `listening.namespace` and listens on
    /// `listening.address`, port 5432, for password logins from any address (`nil`: 127.0.0.1 on a free port).
    static func start(durable: Bool = false, listening: (address: String, namespace: String)?) throws -> LocalPostgresCluster {
        let binaries = try PostgresBinaries.locate()
        let osUser: String? = geteuid() == 0 ? "postgres" : nil
        let directory = try makeDirectory(owner: osUser)
        do {
            return try LocalPostgresCluster(
                binaries: binaries, directory: directory, osUser: osUser, durable: durable, listening: listening)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private convenience init(
        binaries: PostgresBinaries, directory: String, osUser: String?, durable: Bool, listening: (address: String, namespace: String)?
    ) throws {
        let password = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let passwordFile = directory + "/pwfile"
        try password.write(toFile: passwordFile, atomically: true, encoding: .utf8)
        if let osUser { try Shell.output("chown", [osUser, passwordFile]) }
        try Shell.output(
            binaries.initdb,
            [
                "-D", directory + "/data", "-U", "postgres", "--pwfile=\(passwordFile)", "-E", "UTF8", "--locale=C",
                "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
            ], as: osUser)
        try? FileManager.default.removeItem(atPath: passwordFile)
        if listening != nil {
            let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/pg_hba.conf"))
            try hba.seekToEnd()
            try hba.write(contentsOf: Data("\nhost all all 0.0.0.0/0 scram-sha-256\n".utf8))
            try hba.close()
        }
        try self.init(binaries: binaries, directory: directory, osUser: osUser, password: password, durable: durable, listening: listening)
    }

    /// Starts the server of the data folder in `directory` on a free port.
    private init(
        binaries: PostgresBinaries, directory: String, osUser: String?, password: String, durable: Bool = false,
        listening: (address: String, namespace: String)? = nil
    ) throws {
        self.binaries = binaries
        self.directory = directory
        self.osUser = osUser
        self.namespace = listening?.namespace
        let data = directory + "/data"
        Self.startWatchdog(pgCtl: binaries.pgCtl, data: data, directory: directory, osUser: osUser)
        var port = 0
        for attempt in 1...3 {
            // The port is free when chosen but may be taken before the server binds it: try another.
            // A namespace of its own has every port free.
            port = listening == nil ? try Self.freePort() : 5432
            let fast = durable ? [] : ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
            let options =
                ([
                    "-p \(port)", "-k \(directory)", "-c listen_addresses=\(listening?.address ?? "127.0.0.1")", "-c max_connections=600",
                    "-c shared_buffers=128MB",
                ] + fast).joined(separator: " ")
            do {
                try Self.runPgCtl(
                    binaries.pgCtl, ["-D", data, "-l", directory + "/server.log", "-w", "-t", "120", "-o", options, "start"], as: osUser,
                    in: listening?.namespace)
                break
            } catch {
                // A server still starting after the wait must not outlive its deleted directory.
                _ = try? Shell.output(binaries.pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"], as: osUser)
                if attempt == 3 { throw error }
            }
        }
        var settings = ConnectionSettings(
            host: listening?.address ?? "127.0.0.1", port: port, user: "postgres", password: password, database: "postgres")
        settings.sslMode = .disable
        self.settings = settings
    }

    /// Starts a streaming replica of this cluster (`pg_basebackup -R`, its own folder and port), in hot standby:
    /// it answers reads, refuses writes and replays the primary's changes. Stop it with ``stop()``.
    public func startReplica() throws -> LocalPostgresCluster {
        let replica = try Self.makeDirectory(owner: osUser)
        do {
            try Shell.output(
                binaries.directory + "/pg_basebackup",
                [
                    "-h", directory, "-p", String(settings.port), "-U", "postgres", "-D", replica + "/data", "-R", "-X", "stream",
                    "--no-sync", "-c", "fast",
                ], as: osUser)
            return try LocalPostgresCluster(binaries: binaries, directory: replica, osUser: osUser, password: settings.password ?? "")
        } catch {
            try? FileManager.default.removeItem(atPath: replica)
            throw error
        }
    }

    /// Promotes this replica to a primary (`pg_ctl promote`), returning once it accepts writes.
    public func promote() throws {
        try Shell.output(binaries.pgCtl, ["-D", directory + "/data", "-w", "promote"], as: osUser)
    }

    /// Restarts the server on the same port and data (`pg_ctl restart`): `fast` ends every session at once, rolling
    /// back what they had not committed. Returns once it accepts connections again.
    public func restart() throws {
        try serverCommand(["-D", directory + "/data", "-l", directory + "/server.log", "-m", "fast", "-w", "-t", "120", "restart"])
    }

    /// Runs `pg_ctl` with `arguments`, as the cluster's OS user and in its network namespace (a server it starts
    /// listens there).
    private func serverCommand(_ arguments: [String]) throws {
        try Self.runPgCtl(binaries.pgCtl, arguments, as: osUser, in: namespace)
    }

    private static func runPgCtl(_ pgCtl: String, _ arguments: [String], as osUser: String?, in namespace: String?) throws {
        guard let namespace else {
            try Shell.output(pgCtl, arguments, as: osUser)
            return
        }
        try Shell.output("ip", ["netns", "exec", namespace] + (osUser.map { ["runuser", "-u", $0, "--"] } ?? []) + [pgCtl] + arguments)
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`: no checkpoint, sessions cut off),
    /// keeping its files; ``stop()`` still removes them.
    public func stopImmediately() throws {
        try Shell.output(binaries.pgCtl, ["-D", directory + "/data", "-m", "immediate", "-w", "stop"], as: osUser)
    }

    /// Stops the server and deletes its directory.
    public func stop() {
        _ = try? Shell.output(binaries.pgCtl, ["-D", directory + "/data", "-m", "fast", "-w", "stop"], as: osUser)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The directory of the server's Unix-domain socket, usable as `host` of ``ConnectionSettings``.
    public var socketDirectory: String { directory }

    /// Switches TLS on, with a server certificate for `localhost` signed by a throwaway CA made with
    /// `openssl`; returns the CA's PEM file, for `sslrootcert`, once the server accepts TLS connections. Calling it
    /// again returns the same CA.
    public func enableTLS() async throws -> String {
        let tls = directory + "/tls"
        let ca = tls + "/ca.pem"
        if FileManager.default.fileExists(atPath: ca) { return ca }
        try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
        try "subjectAltName=DNS:localhost\n".write(toFile: tls + "/ext.cnf", atomically: true, encoding: .utf8)
        try Shell.output(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", tls + "/ca.key",
                "-out", tls + "/ca.tmp", "-days", "2", "-subj", "/CN=structpg-test-ca",
            ])
        try Shell.output(
            "openssl",
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", tls + "/server.key",
                "-out", tls + "/server.csr", "-subj", "/CN=localhost",
            ])
        try Shell.output(
            "openssl",
            [
                "x509", "-req", "-in", tls + "/server.csr", "-CA", tls + "/ca.tmp", "-CAkey", tls + "/ca.key",
                "-CAcreateserial", "-out", tls + "/server.crt", "-days", "2", "-extfile", tls + "/ext.cnf",
            ])
        if let osUser { try Shell.output("chown", ["-R", osUser, tls]) }
        try Shell.output("chmod", ["600", tls + "/server.key"])
        let settings = "\nssl = on\nssl_cert_file = '\(tls)/server.crt'\nssl_key_file = '\(tls)/server.key'\n"
        let conf = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/postgresql.conf"))
        try conf.seekToEnd()
        try conf.write(contentsOf: Data(settings.utf8))
        try conf.close()
        try Shell.output(binaries.pgCtl, ["-D", directory + "/data", "reload"], as: osUser)
        // The server reads its configuration again when it handles the reload's signal: wait for a TLS connection.
        var encrypted = self.settings
        encrypted.sslMode = .require
        try await PostgresService.waitUntilAvailable(encrypted, timeout: .seconds(30))
        try FileManager.default.moveItem(atPath: tls + "/ca.tmp", toPath: ca)
        return ca
    }

    /// The server's log so far, for diagnosing a failed test.
    public var serverLog: String {
        (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
    }

    static func makeDirectory(owner: String?) throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        var template = Array("\(base)/structpg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestDatabaseError("cannot create a temporary directory in \(base)") }
        let path = String(cString: made)
        if let owner { try Shell.output("chown", [owner, path]) }
        return path
    }

    /// Asks the kernel for a free TCP port on 127.0.0.1.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestDatabaseError("cannot open a socket to find a free port") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestDatabaseError("cannot bind a socket on 127.0.0.1 to find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Stops the server and removes its files once this process has ended, whatever way it ends.
    private static func startWatchdog(pgCtl: String, data: String, directory: String, osUser: String?) {
        let runAs = osUser.map { "runuser -u \($0) -- " } ?? ""
        Watchdog.start(
            cleanup: """
                \(runAs)'\(pgCtl)' -D '\(data)' -m immediate stop >/dev/null 2>&1
                rm -rf '\(directory)'
                """)
    }
}
