import Foundation

extension ConnectionSettings {
    /// Parses a libpq connection URI: `postgres[ql]://[user[:password]@][host][:port][/database][?param=value&...]`.
    ///
    /// Query parameters understood: `sslmode`, `sslrootcert`, `application_name`, `connect_timeout`,
    /// `host` (a socket directory or host name), `port`, `user`, `password`, `dbname`, `target_session_attrs`,
    /// `keepalives`, `keepalives_idle`, `keepalives_interval`, `keepalives_count`, `tcp_user_timeout` (see
    /// ``tcpKeepalive``, ``tcpUserTimeout``), `options` (`-c name=value ...`, see ``serverSettings``),
    /// and `pool_mode` (`transaction` behind PgBouncer in transaction mode; not libpq's).
    /// Several hosts are listed as libpq lists them: `postgres://h1:5432,h2:5433/db?target_session_attrs=read-write`.
    /// Parts the URL leaves out are taken from `environment` (libpq's `PG*` variables) and then defaults; pass
    /// `ProcessInfo.processInfo.environment` for the process's own. As in libpq, a URL without a user name
    /// (`postgres://db1:5432,db2:5432/shop?target_session_attrs=read-write`, as `pg_autoctl show uri` prints) connects as
    /// `PGUSER`, or else as the operating-system user running the process; the database defaults to the user name.
    /// - Throws: ``StructPostgresError`` with code `invalidConfiguration`, naming the part that is wrong.
    public init(url: String, environment: [String: String] = [:]) throws {
        var parts = try URLParts(url)
        parts.fillMissing(from: environment)
        self = try parts.settings()
    }

    /// Reads `DATABASE_URL` when set, otherwise libpq's `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
    /// `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGAPPNAME`, `PGCONNECT_TIMEOUT` and `PGOPTIONS`.
    /// A URL's missing parts are filled from the `PG*` variables, as libpq does. Without a user name in either,
    /// the operating-system user's name is used, as libpq does.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> ConnectionSettings {
        if let url = environment["DATABASE_URL"], !url.isEmpty {
            return try ConnectionSettings(url: url, environment: environment)
        }
        var parts = URLParts()
        parts.fillMissing(from: environment)
        return try parts.settings()
    }
}

/// The raw, still-unvalidated pieces of a connection URL or environment.
struct URLParts {
    var user: String?
    var password: String?
    var host: String?
    var port: String?
    var database: String?
    var sslMode: String?
    var sslRootCert: String?
    var applicationName: String?
    var connectTimeout: String?
    var targetSessionAttributes: String?
    var poolMode: String?
    var keepalives: String?
    var keepalivesIdle: String?
    var keepalivesInterval: String?
    var keepalivesCount: String?
    var tcpUserTimeout: String?
    var options: String?
    /// Where ``options`` came from, for an error: the URL's `options` or `PGOPTIONS`.
    var optionsOrigin = "options"
    /// Hosts after the first, with their ports (`nil`: the first host's port).
    var otherHosts: [(host: String, port: String?)] = []
    /// Where the parts came from, for an error: the URL without its user name, password and query (which may hold a
    /// password), or the environment.
    var source = "the environment (no DATABASE_URL)"

    init() {}

    init(_ url: String) throws {
        func fail(_ why: String) -> StructPostgresError {
            StructPostgresError(.invalidConfiguration, "connection URL: \(why)")
        }
        guard let schemeEnd = url.range(of: "://") else {
            throw fail("missing scheme; expected postgres:// or postgresql://")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw fail("scheme '\(scheme)' is not postgres or postgresql")
        }
        var rest = Substring(url[schemeEnd.upperBound...])
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        if rest.contains("#") { throw fail("a fragment ('#') is not allowed") }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        }
        // An unencoded '/', '?' or '@' in a password moves the '@' past the host; never echo those parts.
        let firstParameter = query.split(separator: "&").first ?? ""
        let misplacedAt = fail(
            "an '@' follows the host part; percent-encode '@', '/', '?', '#' and ':' in the user name and password (e.g. '/' as %2F)")
        if !authority.contains("@") && (path.contains("@") || firstParameter.split(separator: "=").first?.contains("@") == true) {
            throw misplacedAt
        }
        // A query that does not parse and holds an '@' may be the rest of a password cut at an unencoded '?'.
        let queryMayHoldPassword = !authority.contains("@") && query.contains("@")
        if !path.isEmpty { database = try Self.decode(path, part: "database name") }
        let hostsAndPath = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        source = "the URL \(scheme)://\(hostsAndPath)\(path.isEmpty ? "" : "/\(path)")"
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decode(userInfo[..<colon], part: "user name")
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], part: "password")
            } else if !userInfo.isEmpty {
                user = try Self.decode(userInfo, part: "user name")
            }
        }
        try parseHostPort(authority, fail: fail)
        for pair in query.split(separator: "&") where !pair.isEmpty {
            guard let equals = pair.firstIndex(of: "=") else {
                throw queryMayHoldPassword ? misplacedAt : fail("query parameter '\(pair)' has no '=value'")
            }
            let name = String(pair[..<equals])
            let value = try Self.decode(pair[pair.index(after: equals)...], part: "parameter \(name)")
            switch name {
            case "sslmode": sslMode = value
            case "sslrootcert": sslRootCert = value
            case "application_name": applicationName = value
            case "connect_timeout": connectTimeout = value
            case "host": host = value
            case "port": port = value
            case "user": user = value
            case "password": password = value
            case "dbname": database = value
            case "target_session_attrs": targetSessionAttributes = value
            case "pool_mode": poolMode = value
            case "keepalives": keepalives = value
            case "keepalives_idle": keepalivesIdle = value
            case "keepalives_interval": keepalivesInterval = value
            case "keepalives_count": keepalivesCount = value
            case "tcp_user_timeout": tcpUserTimeout = value
            case "options": options = value
            default: throw queryMayHoldPassword ? misplacedAt : fail("unknown query parameter '\(name)'")
            }
        }
    }

    private mutating func parseHostPort(
        _ authority: Substring, fail: (String) -> StructPostgresError
    ) throws {
        guard !authority.isEmpty else { return }
        let hosts = authority.split(separator: ",", omittingEmptySubsequences: false)
        if hosts.count > 1 {
            for (index, entry) in hosts.enumerated() {
                guard !entry.isEmpty else { throw fail("host \(index + 1) of the host list is empty") }
                var part = URLParts()
                try part.parseHostPort(entry, fail: fail)
                if index == 0 {
                    (host, port) = (part.host, part.port)
                } else {
                    otherHosts.append((part.host ?? "localhost", part.port))
                }
            }
            return
        }
        var hostPart = authority
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw fail("IPv6 host '\(authority)' has no closing ']'")
            }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                port = String(after.dropFirst())
            } else if !after.isEmpty {
                throw fail("unexpected '\(after)' after IPv6 host")
            }
            return
        }
        if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            port = String(authority[authority.index(after: colon)...])
        }
        if !hostPart.isEmpty { host = try Self.decode(hostPart, part: "host") }
    }

    private static func decode(_ text: Substring, part: String) throws -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            // Never echo the text: it may be a password.
            throw StructPostgresError(.invalidConfiguration, "connection URL: the \(part) has invalid percent-encoding")
        }
        return decoded
    }

    /// Fills what is missing from libpq's `PG*` variables in `env`; a user name missing there too, from
    /// `operatingSystemUser` (the effective user's name, as libpq's `pg_fe_getauthname` reads it).
    mutating func fillMissing(
        from env: [String: String], operatingSystemUser: () -> String? = OperatingSystemUser.name
    ) {
        func pick(_ current: String?, _ name: String) -> String? {
            current ?? env[name].flatMap { $0.isEmpty ? nil : $0 }
        }
        host = pick(host, "PGHOST")
        port = pick(port, "PGPORT")
        user = pick(user.flatMap { $0.isEmpty ? nil : $0 }, "PGUSER")
        password = pick(password, "PGPASSWORD")
        database = pick(database, "PGDATABASE")
        sslMode = pick(sslMode, "PGSSLMODE")
        sslRootCert = pick(sslRootCert, "PGSSLROOTCERT")
        applicationName = pick(applicationName, "PGAPPNAME")
        connectTimeout = pick(connectTimeout, "PGCONNECT_TIMEOUT")
        targetSessionAttributes = pick(targetSessionAttributes, "PGTARGETSESSIONATTRS")
        if options == nil, let fromEnvironment = pick(nil, "PGOPTIONS") {
            options = fromEnvironment
            optionsOrigin = "PGOPTIONS"
        }
        if user == nil { user = operatingSystemUser().flatMap { $0.isEmpty ? nil : $0 } }
    }

    func settings() throws -> ConnectionSettings {
        func fail(_ why: String) -> StructPostgresError {
            StructPostgresError(.invalidConfiguration, why)
        }
        guard let user, !user.isEmpty else {
            throw fail(
                "no user name: \(source) gives none, PGUSER is not set, and the operating-system user's name cannot be read; give one in the URL (postgres://user@host/db) or set PGUSER"
            )
        }
        var settings = ConnectionSettings(user: user, password: password, database: database)
        if let host { settings.host = host }
        func portNumber(_ port: String) throws -> Int {
            guard let number = Int(port), (1...65535).contains(number) else {
                throw fail("port '\(port)' is not a number between 1 and 65535")
            }
            return number
        }
        if let port { settings.port = try portNumber(port) }
        settings.otherHosts = try otherHosts.map { Endpoint(host: $0.host, port: try $0.port.map(portNumber) ?? 5432) }
        if let targetSessionAttributes {
            guard let attributes = TargetSessionAttributes(rawValue: targetSessionAttributes) else {
                let known = TargetSessionAttributes.allCases.map(\.rawValue).joined(separator: ", ")
                throw fail("target_session_attrs '\(targetSessionAttributes)' is not one of \(known)")
            }
            settings.targetSessionAttributes = attributes
        }
        if let poolMode {
            guard let mode = PoolMode(rawValue: poolMode) else {
                throw fail("pool_mode '\(poolMode)' is not session or transaction")
            }
            settings.poolMode = mode
        }
        if let sslMode {
            guard let mode = SSLMode(rawValue: sslMode) else {
                let known = SSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw fail("sslmode '\(sslMode)' is not one of \(known)")
            }
            settings.sslMode = mode
        }
        if let sslRootCert {
            settings.sslRootCert = sslRootCert
            if settings.sslMode == .require { settings.sslMode = .verifyCA }
        }
        settings.applicationName = applicationName
        if let connectTimeout {
            guard let seconds = Int(connectTimeout), seconds >= 0 else {
                throw fail("connect_timeout '\(connectTimeout)' is not a whole number of seconds")
            }
            // libpq: 0 means wait indefinitely, and values below 2 count as 2.
            if seconds > 0 { settings.connectTimeout = .seconds(max(seconds, 2)) }
        }
        try applyConnectionOptions(to: &settings)
        return settings
    }
}
