import NIOCore
import NIOSSL
import PostgresNIO

extension ConnectionSettings {
    enum TLSChoice {
        case disable
        case prefer(TLSConfiguration)
        case require(TLSConfiguration)
    }

    /// The TLS setting that keeps libpq's meaning of ``sslMode``.
    func tlsChoice() throws -> TLSChoice {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable:
            return .disable
        case .allow, .prefer:
            tls.certificateVerification = .none
            return .prefer(tls)
        case .require:
            tls.certificateVerification = .none
            return .require(tls)
        case .verifyCA:
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = try trustRoots()
            return .require(tls)
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            tls.trustRoots = try trustRoots()
            return .require(tls)
        }
    }

    func clientTLS() throws -> PostgresClient.Configuration.TLS {
        switch try tlsChoice() {
        case .disable: .disable
        case .prefer(let tls): .prefer(tls)
        case .require(let tls): .require(tls)
        }
    }

    /// A single-connection configuration: over `channel`, a TCP connection to ``host`` opened already (see
    /// `ConnectionSettings.connect`), or to ``host`` and ``port`` (a Unix-domain socket when ``usesUnixSocket``).
    /// - Throws: ``StructPostgresError`` `invalidConfiguration` for settings no connection can be made with.
    package func connectionConfiguration(over channel: (any Channel)? = nil) throws -> PostgresConnection.Configuration {
        try validateConnectionOptions()
        var configuration: PostgresConnection.Configuration
        if usesUnixSocket {
            configuration = .init(unixSocketPath: unixSocketPath, username: user, password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS =
                switch try tlsChoice() {
                case .disable: .disable
                case .prefer(let tls): .prefer(try NIOSSLContext(configuration: tls))
                case .require(let tls): .require(try NIOSSLContext(configuration: tls))
                }
            if let channel {
                configuration = .init(establishedChannel: channel, tls: tls, username: user, password: password, database: database)
                // As PostgresNIO does for a host it connects to itself: the name, unless it is an address.
                if (try? SocketAddress(ipAddress: host, port: 0)) == nil { configuration.options.tlsServerName = host }
            } else {
                configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
            }
        }
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// Sessions run in UTC, so that `timestamp without time zone` columns hold UTC wall-clock times; then
    /// ``applicationName`` and ``serverSettings``.
    var startupParameters: [(String, String)] {
        var parameters = [("TimeZone", "UTC")]
        if let applicationName { parameters.append(("application_name", applicationName)) }
        parameters += serverSettings.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return parameters
    }

    private func trustRoots() throws -> NIOSSLTrustRoots {
        guard let path = sslRootCert, path != "system" else { return .default }
        do {
            return .certificates(try NIOSSLCertificate.fromPEMFile(path))
        } catch {
            throw StructPostgresError(
                .invalidConfiguration, "sslrootcert '\(path)' could not be read as PEM certificates: \(error)")
        }
    }

    /// The PostgresNIO client configuration for these settings and pool options (TLS as ``sslMode`` says),
    /// for code that also talks to PostgresNIO's `PostgresClient` directly.
    public func clientConfiguration(pool: PoolOptions = PoolOptions()) throws -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if usesUnixSocket {
            configuration = .init(unixSocketPath: unixSocketPath, username: user, password: password, database: database)
        } else {
            configuration = .init(
                host: host, port: port, username: user, password: password, database: database, tls: try clientTLS())
        }
        configuration.options.maximumConnections = pool.maxConnections
        configuration.options.minimumConnections = pool.minConnections
        configuration.options.connectionIdleTimeout = pool.idleTimeout
        configuration.options.connectTimeout = connectTimeout ?? pool.connectTimeout
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }
}
