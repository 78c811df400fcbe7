import Foundation
import Logging
import StructPostgres
import StructPostgresTesting
import Testing

enum TestServer {
    static var databaseURL: String? {
        ProcessInfo.processInfo.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    /// The local cluster uses passwords; a server of DATABASE_URL may trust its clients.
    static var usesPasswords: Bool {
        guard let url = databaseURL else { return true }
        return (try? ConnectionSettings(url: url))?.password != nil
    }
    static var isLocal: Bool { databaseURL == nil }
}

@Suite(.tags(.timed)) struct ConnectionTests {
    /// PostgresNIO's pool does not replace a connection that closes while callers wait for one (it only keeps
    /// its minimum); the library makes it open one, so the waiter is served, with or without kept connections.
    @Test(arguments: [Duration.zero, .seconds(1)])
    func aCallerWaitingForTheOnlyConnectionGetsANewOneWhenItCloses(keep: Duration) async throws {
        let pool = PoolOptions(maxConnections: 1, acquireTimeout: .seconds(10), keepIdleConnectionsFor: keep)
        try await withTables(pool: pool) { service, _ in
            _ = try await service.query("SELECT 1")
            let (holding, signal) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await service.withConnection { connection in
                    signal.yield()
                    try await Task.sleep(for: .milliseconds(300))
                    try await connection.close()
                }
            }
            for await _ in holding { break }
            let started = ContinuousClock.now
            let waiter = Task { try await service.query("SELECT 2") }
            try await holder.value
            let rows = try await waiter.value
            #expect(rows.count == 1)
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test func aCallerWaitingTooLongForAConnectionGetsThePoolSizeAndUse() async throws {
        try await withTables(pool: PoolOptions(maxConnections: 2, acquireTimeout: .seconds(2))) { service, _ in
            // Both connections opened first: on a loaded machine opening one can take longer than the timeout.
            for attempt in 1...5 {
                do {
                    try await service.withConnection { _ in try await service.withConnection { _ in } }
                    break
                } catch let error as StructPostgresError where error.code == .poolTimeout && attempt < 5 {}
            }
            let started = ContinuousClock.now
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.withConnection { _ in
                    try await service.withConnection { _ in
                        _ = try await service.query("SELECT 1")
                    }
                }
            }
            let waited = ContinuousClock.now - started
            #expect(error?.code == .poolTimeout)
            #expect(error?.message.contains("at most 2 connections and 2 are in use") == true, "\(error?.message ?? "no error")")
            #expect(waited < .seconds(10))
            #expect(service.connectionsInUse == 0)
            // The pool still works after a timeout.
            let rows = try await service.query("SELECT 1")
            #expect(rows.count == 1)
        }
    }

    @Test(.enabled(if: TestServer.usesPasswords, "the server of DATABASE_URL does not ask for a password"))
    func aWrongPasswordFailsAtOnceWithoutShowingThePassword() async throws {
        var settings = try await TestPostgres.adminSettings()
        settings.password = "wrong-Secret-42"
        let logs = CapturedLogs()
        // Far beyond the bound below: the refusal comes from the server, not from the pool's wait.
        var configuration = PostgresService.Configuration(
            connection: settings, pool: PoolOptions(maxConnections: 1, acquireTimeout: .seconds(120)))
        configuration.logger = logs.makeLogger()
        let started = ContinuousClock.now
        let error = await #expect(throws: StructPostgresError.self) {
            try await PostgresService.withService(configuration: configuration) { _ = try await $0.query("SELECT 1") }
        }
        // Bounded, not hanging: on 2 busy cores a connection attempt alone can take seconds.
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(error?.sqlState == "28P01")
        #expect(error?.message.contains("password authentication failed") == true)
        #expect(error.map { "\($0)" }?.contains("wrong-Secret-42") == false)
        #expect(!logs.lines.withLock { $0.joined() }.contains("wrong-Secret-42"))
    }

    @Test func aDatabaseThatDoesNotExistFailsAtOnce() async throws {
        var settings = try await TestPostgres.adminSettings()
        settings.database = "structpg_no_such_database"
        var configuration = PostgresService.Configuration(
            connection: settings, pool: PoolOptions(maxConnections: 2, acquireTimeout: .seconds(120)))
        configuration.logger = CapturedLogs().makeLogger()
        let started = ContinuousClock.now
        let error = await #expect(throws: StructPostgresError.self) {
            try await PostgresService.withService(configuration: configuration) { _ = try await $0.query("SELECT 1") }
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(error?.sqlState == "3D000")
        #expect(error?.message.contains("structpg_no_such_database") == true)
    }

    @Test func anUnreachableServerFailsWithinTheTimeout() async throws {
        let settings = ConnectionSettings(host: "127.0.0.1", port: 1, user: "nobody", password: "pw", database: "none", sslMode: .disable)
        var configuration = PostgresService.Configuration(
            connection: settings, pool: PoolOptions(maxConnections: 1, connectTimeout: .seconds(2), acquireTimeout: .seconds(1)))
        configuration.logger = CapturedLogs().makeLogger()
        let started = ContinuousClock.now
        let error = await #expect(throws: StructPostgresError.self) {
            try await PostgresService.withService(configuration: configuration) { _ = try await $0.query("SELECT 1") }
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(error?.code == .connectionLost)
        #expect(error?.message.contains("cannot connect to postgres://nobody:****@127.0.0.1:1/none") == true)
    }

    @Test(.enabled(if: TestServer.isLocal, "with DATABASE_URL there is no local socket to reach"))
    func connectsThroughAUnixSocketWithTheApplicationName() async throws {
        let socket = try #require(try await TestPostgres.localSocketDirectory())
        let admin = try await TestPostgres.adminSettings()
        let url = "postgresql://postgres@/postgres?host=\(socket)&port=\(admin.port)&application_name=structpg-test"
        let configuration = try PostgresService.Configuration(url: url)
        #expect(configuration.connection.usesUnixSocket)
        let name = try await PostgresService.withService(configuration: configuration) { service in
            try await service.query("SELECT current_setting('application_name')")[0].decode(String.self)
        }
        #expect(name == "structpg-test")
    }

    @Test func queriesAreLoggedWithoutValuesUnlessAskedFor() async throws {
        let quiet = CapturedLogs()
        try await withTables(BookSchema.create, configure: { $0.logger = quiet.makeLogger() }) { service, _ in
            let result = try await service.update(entities: [Novel(uuid: UUID(), title: "secret-title-1", price: 1, publisher: nil)])
            #expect(result.inserted == 1)
        }
        let quietText = quiet.lines.withLock { $0.joined(separator: "\n") }
        #expect(quietText.contains("INSERT INTO \"books\""))
        #expect(!quietText.contains("secret-title-1"))

        let loud = CapturedLogs()
        try await withTables(
            BookSchema.create,
            configure: {
                $0.logger = loud.makeLogger()
                $0.logBoundValues = true
            }
        ) { service, _ in
            let result = try await service.update(entities: [Novel(uuid: UUID(), title: "visible-title-2", price: 1, publisher: nil)])
            #expect(result.inserted == 1)
        }
        #expect(loud.lines.withLock { $0.joined(separator: "\n") }.contains("visible-title-2"))
    }

    @Test func serverDetailIsKeptOnlyWhenValuesMayBeShown() async throws {
        let schema =
            "CREATE TABLE books (uuid uuid PRIMARY KEY, title text UNIQUE, price double precision NOT NULL DEFAULT 0, publisher text, author_id uuid)"
        for reveal in [false, true] {
            try await withTables(schema, configure: { $0.logBoundValues = reveal }) { service, _ in
                try await service.update(entities: [Novel(uuid: UUID(), title: "dup-value", price: 1, publisher: nil)])
                let error = await #expect(throws: StructPostgresError.self) {
                    try await service.update(entities: [Novel(uuid: UUID(), title: "dup-value", price: 1, publisher: nil)])
                }
                #expect(error?.code == .uniqueViolation)
                #expect(error.map { "\($0)" }?.contains("dup-value") == reveal)
            }
        }
    }

    @Test func aTraceLoggerShowsNoValuesUnlessAskedFor() async throws {
        let schema =
            "CREATE TABLE books (uuid uuid PRIMARY KEY, title text UNIQUE, price double precision NOT NULL DEFAULT 0, publisher text, author_id uuid)"
        for reveal in [false, true] {
            let logs = CapturedLogs()
            try await withTables(
                schema,
                configure: {
                    $0.logger = logs.makeLogger()
                    $0.logger.logLevel = .trace
                    $0.logBoundValues = reveal
                }
            ) { service, _ in
                try await service.update(entities: [Novel(uuid: UUID(), title: "traced-value", price: 1, publisher: nil)])
                await #expect(throws: StructPostgresError.self) {
                    try await service.update(entities: [Novel(uuid: UUID(), title: "traced-value", price: 1, publisher: nil)])
                }
                _ = try await service.fetch(Novel.self, where: .format("title == 'traced-value'"))
            }
            let text = logs.lines.withLock { $0.joined(separator: "\n") }
            #expect(text.contains("INSERT INTO \"books\""))
            #expect(text.contains("traced-value") == reveal, "PostgresNIO's trace lines (server messages, rows) only with logBoundValues")
        }
    }

    /// Times a pool wait: in this suite, which runs one test at a time, so that a loaded machine does not delay the
    /// connections it opens first beyond the wait it times.
    @Test func onceEveryOpenConnectionIsLeasedTheNextCallerTimesOut() async throws {
        try await withTables(BookSchema.create, pool: PoolOptions(maxConnections: 2, acquireTimeout: .seconds(5))) { service, _ in
            // Both connections open, then idle: later calls lease them directly, and count them.
            try await service.withConnection { _ in try await service.withConnection { _ in #expect(service.connectionsInUse == 2) } }
            #expect(service.connectionsInUse == 0)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.withConnection { _ in
                    try await service.withConnection { _ in _ = try await service.query("SELECT 1") }
                }
            }
            #expect(error?.code == .poolTimeout)
            #expect(service.connectionsInUse == 0)
        }
    }
}
