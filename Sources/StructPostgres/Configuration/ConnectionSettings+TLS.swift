import Logging
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

    /// A single-connection configuration, used to find out why the pool cannot connect.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
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
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// Opens one connection outside any pool, giving up after `timeout`.
    /// - Throws: ``StructPostgresError`` naming these settings (never the password) and the reason.
    func connect(timeout: Duration, id: PostgresConnection.ID = 0, logger: Logger) async throws -> PostgresConnection {
        do {
            var configuration = try connectionConfiguration()
            let parts = timeout.components
            configuration.options.connectTimeout = .milliseconds(max(1, parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000))
            return try await PostgresConnection.connect(
                on: PostgresClient.defaultEventLoopGroup.any(), configuration: configuration, id: id, logger: logger
            ).get()
        } catch {
            var failure = StructPostgresError.from(error, sql: nil)
            if failure.code != .invalidConfiguration && failure.sqlState == nil { failure.code = .connectionLost }
            failure.message = "cannot connect to \(self): \(failure.message)"
            throw failure
        }
    }

    /// Sessions run in UTC, so that `timestamp without time zone` columns hold UTC wall-clock times.
    var startupParameters: [(String, String)] {
        var parameters = [("TimeZone", "UTC")]
        if let applicationName { parameters.append(("application_name", applicationName)) }
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
