import Foundation
import NIOCore
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// libpq's parameters for dead-peer detection and server settings: read with libpq's meanings, written back, checked.
@Suite struct ConnectionOptionsTests {
    private func settings(_ query: String, environment: [String: String] = [:]) throws -> ConnectionSettings {
        try ConnectionSettings(url: "postgres://app@db.internal/shop\(query.isEmpty ? "" : "?")\(query)", environment: environment)
    }

    private func refusal(_ query: String, environment: [String: String] = [:]) -> String {
        do {
            _ = try settings(query, environment: environment)
            return "accepted"
        } catch let error as StructPostgresError {
            #expect(error.code == .invalidConfiguration)
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func deadPeerDetectionIsOnByDefault() throws {
        let plain = try settings("")
        #expect(plain.tcpKeepalive == TCPKeepalive(idle: .seconds(10), interval: .seconds(5), count: 3))
        #expect(plain.tcpKeepalive?.bound == .seconds(25))
        #expect(plain.tcpUserTimeout == .seconds(25))
        #expect(plain.serverSettings.isEmpty)
        #expect(ConnectionSettings(user: "app").tcpKeepalive == plain.tcpKeepalive)
    }

    @Test func keepaliveParametersKeepLibpqsMeanings() throws {
        let given = try settings("keepalives=1&keepalives_idle=7&keepalives_interval=3&keepalives_count=4&tcp_user_timeout=9500")
        #expect(given.tcpKeepalive == TCPKeepalive(idle: .seconds(7), interval: .seconds(3), count: 4))
        #expect(given.tcpUserTimeout == .milliseconds(9500))
        // 0 takes the system's value; keepalives=0 switches keepalive off, whatever the timings say.
        let system = try settings("keepalives_idle=0&keepalives_interval=0&keepalives_count=0&tcp_user_timeout=0")
        #expect(system.tcpKeepalive == TCPKeepalive(idle: nil, interval: nil, count: nil))
        #expect(system.tcpUserTimeout == nil)
        #expect(try settings("keepalives=0&keepalives_idle=7").tcpKeepalive == nil)
    }

    @Test func optionsBecomeServerSettings() throws {
        let given = try settings(
            "options=" + "-c statement_timeout=5s -clock_timeout=2s --idle-in-transaction-session-timeout=1min -c search_path=a\\,\\ b"
                .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect(
            given.serverSettings == [
                "statement_timeout": "5s", "lock_timeout": "2s", "idle_in_transaction_session_timeout": "1min", "search_path": "a, b",
            ])
        #expect(
            given.startupParameters.map { "\($0.0)=\($0.1)" } == [
                "TimeZone=UTC", "idle_in_transaction_session_timeout=1min", "lock_timeout=2s", "search_path=a, b", "statement_timeout=5s",
            ])
        // PGOPTIONS as libpq reads it; the URL's options win.
        #expect(try settings("", environment: ["PGOPTIONS": "-c work_mem=64MB"]).serverSettings == ["work_mem": "64MB"])
        #expect(
            try settings("options=-c%20work_mem%3D1MB", environment: ["PGOPTIONS": "-c work_mem=64MB"]).serverSettings == [
                "work_mem": "1MB"
            ])
    }

    @Test func aDescriptionReadsBackAsTheSameSettings() throws {
        var original = try settings("keepalives_idle=30&keepalives_count=0&tcp_user_timeout=40000")
        original.serverSettings = ["statement_timeout": "5s", "search_path": "a b\\c"]
        let again = try ConnectionSettings(url: original.description)
        #expect(again.tcpKeepalive == original.tcpKeepalive)
        #expect(again.tcpUserTimeout == original.tcpUserTimeout)
        #expect(again.serverSettings == original.serverSettings)
        var off = original
        off.tcpKeepalive = nil
        off.tcpUserTimeout = nil
        #expect(off.description.contains("keepalives=0"))
        #expect(try ConnectionSettings(url: off.description).tcpKeepalive == nil)
        #expect(try ConnectionSettings(url: off.description).tcpUserTimeout == nil)
        #expect(!(try settings("")).description.contains("keepalive"), "defaults are not spelled out")
    }

    @Test func malformedParametersAreRefusedByName() {
        #expect(refusal("keepalives=yes").contains("keepalives 'yes'"))
        #expect(refusal("keepalives_idle=ten").contains("keepalives_idle 'ten' is not a whole number of seconds"))
        #expect(refusal("keepalives_interval=-5").contains("keepalives_interval '-5'"))
        #expect(refusal("keepalives_count=1.5").contains("keepalives_count '1.5'"))
        #expect(refusal("tcp_user_timeout=-1").contains("tcp_user_timeout '-1' is not a whole number of milliseconds"))
        #expect(refusal("options=-d%205").contains("options: '-d' is not supported; give server settings as -c name=value"))
        #expect(refusal("options=-c%20statement_timeout").contains("options: 'statement_timeout' has no '=value'"))
        #expect(refusal("options=-c").contains("options: '-c' is not followed by name=value"))
        #expect(refusal("options=-c%20a%3Db%5C").contains("options: ends with a lone backslash"))
        #expect(refusal("options=-c%20bad%3Bname%3D1").contains("options: 'bad;name' is not a setting name"))
        #expect(refusal("", environment: ["PGOPTIONS": "-x"]).contains("PGOPTIONS: '-x' is not supported"))
        #expect(refusal("options=-c%20TimeZone%3DEurope%2FParis").contains("server setting 'TimeZone' is the library's"))
    }

    @Test func serverSettingsAreRefusedThroughATransactionPooler() {
        let message = refusal("pool_mode=transaction&options=-c%20statement_timeout%3D5s%20-c%20lock_timeout%3D1s")
        #expect(
            message.contains(
                "server settings (lock_timeout, statement_timeout) cannot be sent through a pooler in transaction mode (pool_mode=transaction)"
            ), "\(message)")
        var settings = ConnectionSettings(user: "app")
        settings.poolMode = .transaction
        settings.serverSettings = ["statement_timeout": "5s"]
        #expect(throws: StructPostgresError.self) { try settings.validateConnectionOptions() }
    }

    @Test func settingsMadeInCodeAreCheckedToo() {
        func message(_ change: (inout ConnectionSettings) -> Void) -> String {
            var settings = ConnectionSettings(user: "app")
            change(&settings)
            do {
                try settings.validateConnectionOptions()
                return "accepted"
            } catch {
                return (error as? StructPostgresError)?.message ?? "\(error)"
            }
        }
        #expect(message { $0.tcpUserTimeout = .seconds(-1) }.contains("tcpUserTimeout -1.0 seconds is not positive"))
        let idle = message { $0.tcpKeepalive?.idle = .zero }
        #expect(idle.contains("tcpKeepalive.idle 0.0 seconds is not positive"), "\(idle)")
        let count = message { $0.tcpKeepalive?.count = -2 }
        #expect(count.contains("tcpKeepalive.count -2 is not positive"), "\(count)")
        #expect(message { $0.serverSettings["work mem"] = "1MB" }.contains("server setting 'work mem' is not a setting name"))
        #expect(message { $0.tcpKeepalive = nil } == "accepted")
    }

    @Test func theSocketOptionsFollowTheSettings() throws {
        func options(_ query: String) throws -> [String: SocketOptionValue] {
            var named: [String: SocketOptionValue] = [:]
            for (option, value) in SocketConnector(settings: try settings(query)).socketOptions {
                let name =
                    switch (Int(option.level), Int32(option.name)) {
                    case (Int(SOL_SOCKET), SO_KEEPALIVE): "SO_KEEPALIVE"
                    case (Int(IPPROTO_TCP), SocketConnector.keepaliveIdle): "TCP_KEEPIDLE"
                    case (Int(IPPROTO_TCP), TCP_KEEPINTVL): "TCP_KEEPINTVL"
                    case (Int(IPPROTO_TCP), TCP_KEEPCNT): "TCP_KEEPCNT"
                    default: "\(option.level)/\(option.name)"
                    }
                named[name] = value
            }
            return named
        }
        var expected: [String: SocketOptionValue] = ["SO_KEEPALIVE": 1, "TCP_KEEPIDLE": 10, "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 3]
        #if os(Linux)
        expected["\(IPPROTO_TCP)/\(TCP_USER_TIMEOUT)"] = 25_000
        #endif
        #expect(try options("") == expected)
        #expect(try options("keepalives=0&tcp_user_timeout=0") == ["SO_KEEPALIVE": 0])
        #expect(try options("keepalives_idle=0&keepalives_count=0&tcp_user_timeout=0") == ["SO_KEEPALIVE": 1, "TCP_KEEPINTVL": 5])
    }
}
