import Foundation

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
    /// TCP keepalive, which finds a server that vanished without a word (URL: `keepalives`, `keepalives_idle`,
    /// `keepalives_interval`, `keepalives_count`, with libpq's meanings); `nil` (`keepalives=0`): off. On by default:
    /// see ``TCPKeepalive`` and the *Deploying* article.
    public var tcpKeepalive: TCPKeepalive? = TCPKeepalive()
    /// How long what was sent may go unacknowledged before the connection is given up (`TCP_USER_TIMEOUT`; URL:
    /// `tcp_user_timeout` in milliseconds). 25 s by default; `nil` (`tcp_user_timeout=0`): the system's, about 15
    /// minutes of retransmissions. Linux only; elsewhere keepalive alone finds a dead server.
    public var tcpUserTimeout: Duration? = .seconds(25)
    /// Server settings for every session, sent when connecting (URL: libpq's `options=-c name=value ...`), such as
    /// `statement_timeout` or `lock_timeout`. A pooler in transaction mode (``poolMode`` `.transaction`) drops or
    /// refuses them: set them for the role or database there (`ALTER ROLE app SET statement_timeout = '5s'`).
    ///
    /// ```swift
    /// var settings = try ConnectionSettings(url: "postgres://app@db/shop?options=-c%20statement_timeout%3D5s")
    /// settings.serverSettings["lock_timeout"] = "2s"
    /// ```
    public var serverSettings: [String: String] = [:]

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
        parameters += keepaliveParameters
        if !serverSettings.isEmpty, let options = optionsParameter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
            parameters += "&options=\(options)"
        }
        return "postgres://\(auth)@\(place)/\(database)?\(parameters)"
    }

    /// Every setting as it is, but the password, shown as `****` when there is one.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "host": host, "port": port, "user": user, "password": password.map { _ in "****" } as Any, "database": database,
                "sslMode": sslMode, "sslRootCert": sslRootCert as Any, "applicationName": applicationName as Any,
                "connectTimeout": connectTimeout as Any, "otherHosts": otherHosts,
                "targetSessionAttributes": targetSessionAttributes, "poolMode": poolMode,
                "tcpKeepalive": tcpKeepalive as Any, "tcpUserTimeout": tcpUserTimeout as Any, "serverSettings": serverSettings,
            ], displayStyle: .struct)
    }
}
