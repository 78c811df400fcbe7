import Foundation
import NIOCore
import PostgresNIO
import StructPostgres
import StructPostgresTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Dead-peer detection and server settings reach every connection: read back from the socket (`getsockopt` on the
/// connection's channel) and from the server (`SHOW`). Against the server itself, never through a pooler.
@Suite struct SocketOptionsTests {
    /// A service on a fresh database with `settings` changed by `configure`, on the server's own address.
    private func withService(
        _ configure: (inout ConnectionSettings) throws -> Void, _ body: (PostgresService) async throws -> Void
    ) async throws {
        let database = try await TestDatabase.create(connections: 3)
        do {
            var settings = try await TestPostgres.adminSettings()
            settings.database = database.settings.database
            try configure(&settings)
            try await PostgresService.withService(configuration: .init(connection: settings, pool: PoolOptions(maxConnections: 1))) {
                try await body($0)
            }
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }

    /// The settings a URL with `query` gives, on the test server.
    private func fromURL(_ query: String) -> (inout ConnectionSettings) throws -> Void {
        { settings in
            let parsed = try ConnectionSettings(url: "postgres://app@localhost/db?" + query)
            settings.tcpKeepalive = parsed.tcpKeepalive
            settings.tcpUserTimeout = parsed.tcpUserTimeout
            settings.serverSettings = parsed.serverSettings
        }
    }

    /// `SO_KEEPALIVE`, `TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT` and `TCP_USER_TIMEOUT` of the service's connection.
    private func socketOptions(_ service: PostgresService) async throws -> [SocketOptionValue]? {
        try await service.withConnection { connection in
            let channel = try #require(Mirror(reflecting: connection).descendant("channel") as? any Channel)
            if case .unixDomainSocket = channel.remoteAddress { return nil }
            var values: [SocketOptionValue] = []
            for (level, name) in [
                (SOL_SOCKET, SO_KEEPALIVE), (Int32(IPPROTO_TCP), TCP_KEEPIDLE), (Int32(IPPROTO_TCP), TCP_KEEPINTVL),
                (Int32(IPPROTO_TCP), TCP_KEEPCNT), (Int32(IPPROTO_TCP), Int32(TCP_USER_TIMEOUT)),
            ] {
                let option = ChannelOptions.Types.SocketOption(level: .init(rawValue: level), name: .init(rawValue: name))
                values.append(try await channel.getOption(option).get())
            }
            return values
        }
    }

    private func show(_ setting: String, _ service: PostgresService) async throws -> String {
        try await service.query("SELECT current_setting(\(setting))")[0].decode(String.self)
    }

    @Test func everyConnectionDetectsADeadPeerByDefault() async throws {
        try await withService({ _ in }) { service in
            guard let options = try await socketOptions(service) else { return }
            #expect(options == [1, 10, 5, 3, 25_000], "SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT")
        }
    }

    @Test func libpqsURLParametersReachTheSocketAndTheServer() async throws {
        let options = "-c statement_timeout=1500 -c lock_timeout=2s".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        try await withService(
            fromURL("keepalives_idle=7&keepalives_interval=3&keepalives_count=4&tcp_user_timeout=9000&options=\(options)")
        ) { service in
            if let socket = try await socketOptions(service) { #expect(socket == [1, 7, 3, 4, 9000]) }
            #expect(try await show("statement_timeout", service) == "1500ms")
            #expect(try await show("lock_timeout", service) == "2s")
            // The server's own deadline: the statement is cancelled there, and the connection goes on.
            let error = await #expect(throws: StructPostgresError.self) { try await service.query("SELECT pg_sleep(5)") }
            #expect(error?.sqlState == "57014", "\(String(describing: error))")
            #expect(try await show("statement_timeout", service) == "1500ms")
        }
    }

    @Test func keepalivesZeroSwitchesKeepaliveOff() async throws {
        try await withService(fromURL("keepalives=0&tcp_user_timeout=0")) { service in
            guard let options = try await socketOptions(service) else { return }
            #expect(options[0] == 0, "SO_KEEPALIVE")
            #expect(options[4] == 0, "TCP_USER_TIMEOUT: the system's")
        }
    }

    @Test func serverSettingsGivenInCodeAreSentToo() async throws {
        try await withService({ $0.serverSettings = ["work_mem": "3MB", "application_name": "from-settings"] }) { service in
            #expect(try await show("work_mem", service) == "3MB")
            let named = try await service.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'from-settings'")
            #expect(try named[0].decode(Int64.self) >= 1)
        }
    }

    @Test func aSettingTheServerDoesNotKnowIsNamedByTheServer() async throws {
        let error = await #expect(throws: StructPostgresError.self) {
            try await withService({ $0.serverSettings = ["no_such_setting": "1"] }) { service in _ = try await service.query("SELECT 1") }
        }
        #expect(error?.message.contains("no_such_setting") == true, "\(String(describing: error))")
    }
}
