/// How the connections reach PostgreSQL: directly (or through a pooler in session mode), or through a pooler that
/// hands a server connection to a client for one transaction at a time, such as PgBouncer in `pool_mode =
/// transaction`. URL parameter `pool_mode` (`session`, `transaction`).
public enum PoolMode: String, Sendable, CaseIterable {
    /// Each connection keeps its server session: prepared statements, session settings, `LISTEN`.
    case session
    /// Each transaction (each statement outside one) may run on a different server session: statements are sent
    /// unnamed (parsed each time), no session setting is changed, and observers need
    /// ``PostgresConfiguration/listenerConnection``.
    case transaction
}

/// libpq's `target_session_attrs`: which of the listed hosts a connection may use.
public enum TargetSessionAttributes: String, Sendable, CaseIterable {
    /// The first host that accepts the connection.
    case any
    /// A host that accepts writes (`transaction_read_only` is off).
    case readWrite = "read-write"
    /// A host that refuses writes.
    case readOnly = "read-only"
    /// A server that is not in recovery.
    case primary
    /// A server in recovery (a streaming replica).
    case standby
    /// A standby if one is up, otherwise any host.
    case preferStandby = "prefer-standby"
}

/// A host and port of a multi-host URL (`postgres://h1:5432,h2:5433/db`).
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    /// A TCP host name or address, or the directory of a Unix-domain socket (a path starting with `/`).
    public var host: String
    /// The TCP port, or the number in the socket file's name.
    public var port: Int

    /// An endpoint at `host` and `port`.
    public init(host: String, port: Int = 5432) {
        self.host = host
        self.port = port
    }

    /// `host:port`, or `[socket <path>]` for a socket directory.
    public var description: String { host.hasPrefix("/") ? "[socket \(host)/.s.PGSQL.\(port)]" : "\(host):\(port)" }
}

extension ConnectionSettings {
    /// Every host to try, in order: ``host`` and ``port`` first, then ``otherHosts``.
    public var endpoints: [Endpoint] { [Endpoint(host: host, port: port)] + otherHosts }

    /// These settings with one host only.
    public func at(_ endpoint: Endpoint) -> ConnectionSettings {
        var settings = self
        settings.host = endpoint.host
        settings.port = endpoint.port
        settings.otherHosts = []
        return settings
    }
}
