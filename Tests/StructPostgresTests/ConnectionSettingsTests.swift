import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

@Suite struct ConnectionSettingsTests {
    @Test func parsesEveryPartOfAURL() throws {
        let settings = try ConnectionSettings(
            url:
                "postgresql://app%20user:p%40ss%3Aw%2Frd@db.example.com:6543/shop%2Ddb?sslmode=require&application_name=api&connect_timeout=7"
        )
        #expect(settings.user == "app user")
        #expect(settings.password == "p@ss:w/rd")
        #expect(settings.host == "db.example.com")
        #expect(settings.port == 6543)
        #expect(settings.database == "shop-db")
        #expect(settings.sslMode == .require)
        #expect(settings.applicationName == "api")
        #expect(settings.connectTimeout == .seconds(7))
    }

    @Test func defaultsFollowLibpq() throws {
        let settings = try ConnectionSettings(url: "postgres://ann@localhost")
        #expect(settings.port == 5432)
        #expect(settings.database == "ann")
        #expect(settings.sslMode == .prefer)
        #expect(settings.password == nil)
    }

    @Test func readsIPv6HostsAndUnixSockets() throws {
        let v6 = try ConnectionSettings(url: "postgres://u@[::1]:5433/d")
        #expect(v6.host == "::1")
        #expect(v6.port == 5433)
        let socket = try ConnectionSettings(url: "postgres:///shop?host=/var/run/postgresql&user=app")
        #expect(socket.usesUnixSocket)
        #expect(socket.unixSocketPath == "/var/run/postgresql/.s.PGSQL.5432")
        #expect(socket.database == "shop")
        let encoded = try ConnectionSettings(url: "postgres://app@%2Ftmp%2Fpg/shop")
        #expect(encoded.host == "/tmp/pg")
    }

    @Test func sslModesKeepLibpqMeanings() throws {
        for mode in SSLMode.allCases {
            let settings = try ConnectionSettings(url: "postgres://u@h/d?sslmode=\(mode.rawValue)")
            #expect(settings.sslMode == mode)
            let tls = try settings.tlsChoice()
            switch (mode, tls) {
            case (.disable, .disable): break
            case (.allow, .prefer(let c)), (.prefer, .prefer(let c)), (.require, .require(let c)):
                #expect(c.certificateVerification == .none)
            case (.verifyCA, .require(let c)):
                #expect(c.certificateVerification == .noHostnameVerification)
            case (.verifyFull, .require(let c)):
                #expect(c.certificateVerification == .fullVerification)
            default:
                Issue.record("sslmode \(mode.rawValue) mapped to \(tls)")
            }
        }
        // As in libpq, `require` with a root certificate verifies the chain.
        let withRoot = try ConnectionSettings(url: "postgres://u@h/d?sslmode=require&sslrootcert=/etc/ssl/root.pem")
        #expect(withRoot.sslMode == .verifyCA)
        let missingFile = try ConnectionSettings(url: "postgres://u@h/d?sslmode=verify-full&sslrootcert=/nonexistent/root.pem")
        #expect(throws: StructPostgresError.self) { try missingFile.tlsChoice() }
    }

    @Test func environmentVariablesFillWhatTheURLLeavesOut() throws {
        let env = [
            "PGHOST": "envhost", "PGPORT": "7000", "PGUSER": "envuser", "PGPASSWORD": "envpw",
            "PGDATABASE": "envdb", "PGSSLMODE": "disable", "PGAPPNAME": "envapp", "PGCONNECT_TIMEOUT": "1",
        ]
        let fromEnv = try ConnectionSettings.fromEnvironment(env)
        #expect(fromEnv.host == "envhost")
        #expect(fromEnv.port == 7000)
        #expect(fromEnv.user == "envuser")
        #expect(fromEnv.password == "envpw")
        #expect(fromEnv.database == "envdb")
        #expect(fromEnv.sslMode == .disable)
        #expect(fromEnv.applicationName == "envapp")
        #expect(fromEnv.connectTimeout == .seconds(2))

        var withURL = env
        withURL["DATABASE_URL"] = "postgres://urluser@urlhost/urldb"
        let mixed = try ConnectionSettings.fromEnvironment(withURL)
        #expect(mixed.user == "urluser")
        #expect(mixed.host == "urlhost")
        #expect(mixed.database == "urldb")
        #expect(mixed.port == 7000)
        #expect(mixed.password == "envpw")
    }

    @Test(arguments: [
        ("mysql://u@h/d", "scheme 'mysql'"),
        ("localhost:5432/d", "missing scheme"),
        ("postgres://u@h:port/d", "port 'port'"),
        ("postgres://u@h:70000/d", "port '70000'"),
        ("postgres://u@h/d?sslmode=sometimes", "sslmode 'sometimes'"),
        ("postgres://u@h/d?sslmode", "'sslmode' has no '=value'"),
        ("postgres://u@h/d?color=blue", "unknown query parameter 'color'"),
        ("postgres://u@h/d?connect_timeout=soon", "connect_timeout 'soon'"),
        ("postgres://u@h1,,h2/d", "host 2 of the host list is empty"),
        ("postgres://u@h1,h2:x/d", "port 'x'"),
        ("postgres://u@h/d?target_session_attrs=writable", "target_session_attrs 'writable' is not one of any, read-write"),
        ("postgres://u@h/d?pool_mode=statement", "pool_mode 'statement' is not session or transaction"),
        ("postgres://u@[::1/d", "no closing ']'"),
        ("postgres://u@h/d#frag", "fragment"),
    ])
    func aMalformedURLSaysWhichPartIsWrong(url: String, expected: String) {
        let error = #expect(throws: StructPostgresError.self) { try ConnectionSettings(url: url, environment: [:]) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "no error")")
    }

    @Test func severalHostsAreTriedInOrderAsLibpqListsThem() throws {
        let settings = try ConnectionSettings(
            url: "postgres://u@h1:5433,[::1]:5434,h3/d?target_session_attrs=read-write&pool_mode=transaction")
        #expect(
            settings.endpoints == [Endpoint(host: "h1", port: 5433), Endpoint(host: "::1", port: 5434), Endpoint(host: "h3", port: 5432)])
        #expect(settings.targetSessionAttributes == .readWrite)
        #expect(settings.poolMode == .transaction)
        #expect(
            settings.description
                == "postgres://u@h1:5433,::1:5434,h3:5432/d?sslmode=prefer&target_session_attrs=read-write&pool_mode=transaction")
        #expect(settings.at(settings.endpoints[1]).endpoints == [Endpoint(host: "::1", port: 5434)])
        let fromEnvironment = try ConnectionSettings.fromEnvironment([
            "PGHOST": "h", "PGUSER": "u", "PGTARGETSESSIONATTRS": "prefer-standby",
        ])
        #expect(fromEnvironment.targetSessionAttributes == .preferStandby)
        #expect(try ConnectionSettings(url: "postgres://u@h/d").poolMode == .session)
    }

    /// `pg_autoctl show uri` prints a URL without a user name; libpq then takes `PGUSER`, else the operating-system
    /// user (the password database's entry of the effective uid, not `$USER`).
    @Test func aURLWithoutAUserConnectsAsPGUSERElseAsTheOperatingSystemUser() throws {
        let url = "postgres://127.0.0.1:42177,127.0.0.1:60249/soak?target_session_attrs=read-write&sslmode=prefer"
        let withPGUSER = try ConnectionSettings(url: url, environment: ["PGUSER": "soaker"])
        #expect(withPGUSER.user == "soaker")
        #expect(withPGUSER.endpoints == [Endpoint(host: "127.0.0.1", port: 42177), Endpoint(host: "127.0.0.1", port: 60249)])
        #expect(withPGUSER.database == "soak")
        #expect(withPGUSER.targetSessionAttributes == .readWrite)
        #expect(withPGUSER.sslMode == .prefer)
        #expect(try ConnectionSettings.fromEnvironment(["DATABASE_URL": url, "PGUSER": "soaker"]).user == "soaker")

        let entry = try #require(getpwuid(geteuid()), "the test runs as a user with a password-database entry")
        let systemUser = String(cString: entry.pointee.pw_name)
        let withoutPGUSER = try ConnectionSettings(url: url, environment: [:])
        #expect(withoutPGUSER.user == systemUser)
        #expect(withoutPGUSER.database == "soak")
        #expect(withoutPGUSER.endpoints.count == 2)
        #expect(try ConnectionSettings(url: url, environment: ["USER": "not-\(systemUser)", "PGUSER": ""]).user == systemUser)
        #expect(try ConnectionSettings.fromEnvironment(["DATABASE_URL": url]).user == systemUser)
        #expect(try ConnectionSettings(url: "postgres://:@h/d").user == systemUser)
        let noURL = try ConnectionSettings.fromEnvironment(["PGHOST": "h"])
        #expect(noURL.user == systemUser && noURL.database == systemUser)
    }

    /// Where the operating system names no user either (a container's uid without an entry), the error says where
    /// a name would have come from, without the URL's password or query.
    @Test func withoutAnyUserNameTheErrorNamesPGUSERAndTheURL() throws {
        var parts = try URLParts("postgres://:zq9x@127.0.0.1:42177,127.0.0.1:60249/soak?password=zq9y&sslmode=prefer")
        parts.fillMissing(from: [:], operatingSystemUser: { nil })
        let error = #expect(throws: StructPostgresError.self) { try parts.settings() }
        #expect(error?.code == .invalidConfiguration)
        #expect(
            error?.message
                == "no user name: the URL postgres://127.0.0.1:42177,127.0.0.1:60249/soak gives none, PGUSER is not set, and the operating-system user's name cannot be read; give one in the URL (postgres://user@host/db) or set PGUSER"
        )
        #expect(error.map { "\($0)" }?.contains("zq9") == false)

        var environment = URLParts()
        environment.fillMissing(from: ["PGHOST": "h"], operatingSystemUser: { nil })
        let fromEnvironment = #expect(throws: StructPostgresError.self) { try environment.settings() }
        #expect(fromEnvironment?.message.hasPrefix("no user name: the environment (no DATABASE_URL) gives none, PGUSER is not set") == true)
    }

    @Test func thePasswordNeverAppears() throws {
        let settings = try ConnectionSettings(url: "postgres://u:hunter2@h/d")
        #expect(!settings.description.contains("hunter2"))
        #expect(settings.description == "postgres://u:****@h:5432/d?sslmode=prefer")
        let error = #expect(throws: StructPostgresError.self) { try ConnectionSettings(url: "postgres://u:hun%zzter2@h/d") }
        #expect(error?.message == "connection URL: the password has invalid percent-encoding")
        #expect(error.map { "\($0)" }?.contains("hun") == false)
    }

    @Test func reflectionHidesThePasswordToo() throws {
        var settings = try ConnectionSettings(url: "postgres://u:hunter2@h/d?application_name=shop")
        var configuration = PostgresService.Configuration(connection: settings)
        configuration.replicas = [settings]
        var dumped = ""
        dump(configuration, to: &dumped)
        #expect(!dumped.contains("hunter2"))
        #expect(dumped.contains("****") && dumped.contains("shop"))
        for shown in [
            String(reflecting: settings), String(describing: configuration), "\(Mirror(reflecting: settings).children.map(\.value))",
        ] {
            #expect(!shown.contains("hunter2"), "\(shown)")
        }
        let service = try PostgresService(configuration: configuration)
        for shown: Any in [service, service.primary, service.path] {
            var text = ""
            dump(shown, to: &text)
            #expect(!text.contains("hunter2"))
            #expect(text.contains("****"))
        }
        settings.password = nil
        #expect(Mirror(reflecting: settings).children.first { $0.label == "password" }.map { "\($0.value)" } == "nil")
    }
}

@Suite struct UnencodedPasswordTests {
    @Test(arguments: [
        "postgres://app:pa?zq9x@db/shop", "postgres://app:pa/zq9x@db/shop", "postgres://app:1234/zq9x@db/shop",
        "postgres://app:Pa?zq9x=1@db:5432/shop", "postgres://app:Pa?zq9x&x@db:5432/shop", "postgres://app:Pa?x=1&zq9x@db/shop",
    ])
    func anAtAfterTheHostIsRefusedWithoutEchoingTheURL(url: String) {
        let error = #expect(throws: StructPostgresError.self) { try ConnectionSettings(url: url, environment: [:]) }
        #expect(error?.message.contains("percent-encode") == true)
        #expect(error.map { "\($0)" }?.contains("zq9x") == false)
    }

    @Test func aQueryValueMayHoldAnAt() throws {
        let settings = try ConnectionSettings(url: "postgres://u@h/d?application_name=me@host")
        #expect(settings.applicationName == "me@host")
        let fromEnvironment = #expect(throws: StructPostgresError.self) {
            try ConnectionSettings.fromEnvironment(["DATABASE_URL": "postgres://app:EnvPw?zq9x=1@db/shop"])
        }
        #expect(fromEnvironment.map { "\($0)" }?.contains("zq9x") == false)
        let unknown = #expect(throws: StructPostgresError.self) { try ConnectionSettings(url: "postgres://u@h/d?colour=blue") }
        #expect(unknown?.message == "connection URL: unknown query parameter 'colour'")
    }
}
