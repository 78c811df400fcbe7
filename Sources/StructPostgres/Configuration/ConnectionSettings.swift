/// Where and how to connect: what a `postgres://` URL or libpq's `PG*` variables describe.
///
/// ```swift
/// let settings = try ConnectionSettings(url: "postgres://app:s%40cret@db.internal:5432/shop?sslmode=require")
/// let fromEnv = try ConnectionSettings.fromEnvironment()   // DATABASE_URL, then PGHOST, PGPORT, ...
/// ```
///
/// The password is never part of ``description``, nor of what `dump` or a debugger's reflection show.
public struct ConnectionSettings: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// A TCP host name or address, or the directory of a Unix-domain socket (a path starting with `/`).
    public var host: String = "localhost"
    /// The TCP port, or the number in the socket file's name (see ``unixSocketPath``).
    public var port: Int = 5432
    /// The role to connect as.
    public var user: String
    /// The password, if any; ``description`` and reflection show `****` in its place.
    public var password: String?
    /// The database to connect to.
    public var database: String
    /// Whether to encrypt the connection and what to verify (URL: `sslmode`).
    public var sslMode: SSLMode = .prefer
    /// A PEM file of trusted root certificates, for `verify-ca` / `verify-full`; `"system"` for the system's.
    public var sslRootCert: String?
    /// Sent as `application_name` when connecting, when given.
    public var applicationName: String?
    /// `connect_timeout` in seconds, when given.
    public var connectTimeout: Duration?
    /// Further hosts of a multi-host URL, tried in order after ``host``:``port`` (see ``targetSessionAttributes``).
    public var otherHosts: [Endpoint] = []
    /// Which host to use when several are listed (libpq's `target_session_attrs`); with one host, `.any` does
    /// not check it, any other value refuses a host that does not fit.
    public var targetSessionAttributes: TargetSessionAttributes = .any
    /// `.transaction` behind PgBouncer in transaction mode and similar poolers (URL: `pool_mode=transaction`).
    /// See the *Deploying* article.
    public var poolMode: PoolMode = .session

    /// Settings for one host; `database` defaults to `user`, as in libpq.
    public init(
        host: String = "localhost", port: Int = 5432, user: String, password: String? = nil,
        database: String? = nil, sslMode: SSLMode = .prefer
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database ?? user
        self.sslMode = sslMode
    }

    /// Whether ``host`` names a Unix-domain socket directory.
    public var usesUnixSocket: Bool { host.hasPrefix("/") }

    /// The socket file inside ``host`` for ``port``, as libpq names it.
    public var unixSocketPath: String { "\(host)/.s.PGSQL.\(port)" }

    /// These settings as a `postgres://` URL, with `****` for the password.
    public var description: String {
        let auth = password == nil ? user : "\(user):****"
        let place = endpoints.map(\.description).joined(separator: ",")
        var parameters = "sslmode=\(sslMode.rawValue)"
        if targetSessionAttributes != .any { parameters += "&target_session_attrs=\(targetSessionAttributes.rawValue)" }
        if poolMode != .session { parameters += "&pool_mode=\(poolMode.rawValue)" }
        return "postgres://\(auth)@\(place)/\(database)?\(parameters)"
    }

    /// Every setting as it is, but the password, shown as `****` when there is one.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "host": host, "port": port, "user": user, "password": password.map { _ in "****" } as Any, "database": database,
            "sslMode": sslMode, "sslRootCert": sslRootCert as Any, "applicationName": applicationName as Any,
            "connectTimeout": connectTimeout as Any, "otherHosts": otherHosts,
            "targetSessionAttributes": targetSessionAttributes, "poolMode": poolMode,
        ], displayStyle: .struct)
    }
}
