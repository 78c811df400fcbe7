import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

private let hasOpenSSL = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

/// `sslmode` keeps libpq's meanings against a server with a certificate for `localhost`.
@Suite(.tags(.timed)) struct TLSTests {
    private func encrypted(_ settings: ConnectionSettings) async throws -> Bool {
        let configuration = PostgresService.Configuration(
            connection: settings, pool: PoolOptions(maxConnections: 1, connectTimeout: .seconds(5), acquireTimeout: .seconds(6)))
        return try await PostgresService.withService(configuration: configuration) { service in
            try await service.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")[0].decode(Bool.self)
        }
    }

    private func settings(_ query: String, host: String = "localhost") async throws -> ConnectionSettings {
        let admin = try await TestPostgres.adminSettings()
        let password = admin.password!.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        return try ConnectionSettings(url: "postgres://postgres:\(password)@\(host):\(admin.port)/postgres?\(query)")
    }

    @Test(.enabled(if: TestServer.isLocal && hasOpenSSL, "needs the local cluster and openssl to make a certificate"))
    func sslModesKeepLibpqMeanings() async throws {
        let cluster = try #require(try await TestPostgres.localCluster())
        let ca = try await cluster.enableTLS()

        #expect(try await encrypted(settings("sslmode=disable")) == false)
        #expect(try await encrypted(settings("sslmode=prefer")) == true)
        // require: encrypted, certificate not verified (the CA is unknown to this client).
        #expect(try await encrypted(settings("sslmode=require")) == true)
        // verify-ca: the chain is checked, the host name is not (the certificate names localhost).
        #expect(try await encrypted(settings("sslmode=verify-ca&sslrootcert=\(ca)", host: "127.0.0.1")) == true)
        #expect(try await encrypted(settings("sslmode=verify-full&sslrootcert=\(ca)")) == true)

        let wrongHost = await #expect(throws: StructPostgresError.self) {
            _ = try await encrypted(settings("sslmode=verify-full&sslrootcert=\(ca)", host: "127.0.0.1"))
        }
        #expect(wrongHost?.code == .connectionLost)
        let unknownCA = await #expect(throws: StructPostgresError.self) {
            _ = try await encrypted(settings("sslmode=verify-full"))
        }
        #expect(unknownCA?.code == .connectionLost)
    }
}
