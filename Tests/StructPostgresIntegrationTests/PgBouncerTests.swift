import Foundation
import Logging
import StructPostgres
import StructPostgresTesting
import Testing

/// A counter row written by many callers at once.
struct Tally: StoredModel, Equatable {
    static let table = "tallies"
    var uuid: UUID
    var count: Int32
}

/// What a service meets behind PgBouncer 1.18 in `pool_mode = transaction` (Debian's), with a pool of fewer server
/// connections than client connections, so that consecutive statements of one client land on different server
/// sessions. The main flows run through it as a whole second pass (`STRUCTPG_TEST_POOLER=pgbouncer`, see
/// `scripts/test.sh`); these are what only a pooler shows.
@Suite(
    .enabled(if: LocalPgBouncer.program != nil, "pgbouncer is not installed (scripts/ensure-postgres.sh --pgbouncer installs it)"),
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "PgBouncer is started in front of the local cluster; DATABASE_URL is set"))
struct PgBouncerTests {
    /// A database reached directly and through a PgBouncer of its own; `body` gets the direct settings and the
    /// pooler's (with the pool mode left as the user set it: `.session`, the default).
    private func withPooler(
        poolSize: Int = 4, _ body: (_ direct: ConnectionSettings, _ pooled: ConnectionSettings) async throws -> Void
    ) async throws {
        let cluster = try #require(try await TestPostgres.localCluster())
        let bouncer = try LocalPgBouncer.start(in: cluster, poolSize: poolSize)
        defer { bouncer.stop() }
        let database = try await TestDatabase.create()
        var direct = try await TestPostgres.adminSettings()
        direct.database = database.settings.database
        var pooled = bouncer.settings
        pooled.database = database.settings.database
        pooled.poolMode = .session
        do {
            try await body(direct, pooled)
        } catch {
            Issue.record("pgbouncer log: \(bouncer.log.suffix(2_000))")
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }

    private static func service(_ settings: ConnectionSettings, logger: Logger? = nil, _ body: (PostgresService) async throws -> Void)
        async throws
    {
        var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 8))
        if let logger { configuration.logger = logger }
        try await PostgresService.withService(configuration: configuration, body)
    }

    @Test func withTheDefaultsConcurrentSingleUpsertsAreAllWrittenAndOneWarningNamesTheSwitch() async throws {
        try await withPooler { direct, pooled in
            try await Self.service(direct) {
                try await $0.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
            }
            let logs = CapturedLogs()
            var logger = logs.makeLogger()
            logger.logLevel = .warning
            try await Self.service(pooled, logger: logger) { service in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            for call in 0..<200 { try await service.update(entities: [Tally(uuid: UUID(), count: Int32(call))]) }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await service.count(Tally.self) == 1_600)
            }
            let warnings = logs.lines.withLock { $0 }.filter { $0.contains("pool_mode=transaction") }
            #expect(warnings.count == 1, "one warning naming the switch, got \(warnings)")
        }
    }

    @Test func theSwitchInTheURLSendsEveryStatementUnnamedAndWarnsOfNothing() async throws {
        try await withPooler { direct, pooled in
            try await Self.service(direct) {
                try await $0.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
            }
            let url =
                "postgres://\(pooled.user):\(pooled.password ?? "")@\(pooled.host):\(pooled.port)/\(pooled.database)?sslmode=disable&pool_mode=transaction"
            let settings = try ConnectionSettings(url: url)
            #expect(settings.poolMode == .transaction)
            let logs = CapturedLogs()
            var logger = logs.makeLogger()
            logger.logLevel = .warning
            try await Self.service(settings, logger: logger) { service in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            for call in 0..<100 { try await service.update(entities: [Tally(uuid: UUID(), count: Int32(call))]) }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await service.count(Tally.self) == 800)
            }
            #expect(logs.lines.withLock { $0 }.isEmpty)
            // No session of the server holds a statement of the library.
            try await Self.service(direct) { service in
                let prepared = try await service.query("SELECT count(*)::int8 FROM pg_prepared_statements WHERE name LIKE 'structpg_%'")
                #expect(try prepared[0].decode(Int64.self) == 0)
            }
        }
    }

    @Test func migratorsRacingThroughThePoolerApplyEachMigrationOnceAndLeaveNoLockHeld() async throws {
        let files = try MigrationSet([
            Migration(
                fileName: "0001_tallies.sql", text: "-- migrate:up\nCREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL);\n"
            ),
            Migration(fileName: "0002_slow.sql", text: "-- migrate:up\nSELECT pg_sleep(0.2);\nALTER TABLE tallies ADD COLUMN note text;\n"),
            Migration(
                fileName: "0003_index.sql",
                text: "-- migrate:up transaction:false\nCREATE INDEX CONCURRENTLY tallies_count ON tallies (count);\n"),
        ])
        try await withPooler(poolSize: 3) { direct, pooled in
            var transactionMode = pooled
            transactionMode.poolMode = .transaction
            let settings = transactionMode
            for round in 1...3 {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<3 {
                        group.addTask {
                            var applied = 0
                            try await Self.service(settings) { service in
                                applied = try await Migrator(service: service, migrations: files).migrate().steps.count
                            }
                            return applied
                        }
                    }
                    var total = 0
                    for try await applied in group { total += applied }
                    #expect(total == (round == 1 ? 3 : 0), "each migration applied once in all, round \(round)")
                }
                try await Self.service(direct) { service in
                    let locks = try await service.query(
                        "SELECT count(*)::int8 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                    #expect(try locks[0].decode(Int64.self) == 0, "no advisory lock left held after round \(round)")
                    let history = try await service.query("SELECT count(*)::int8 FROM structpg_migrations WHERE state = 'applied'")
                    #expect(try history[0].decode(Int64.self) == 3)
                }
            }
        }
    }

    /// The URL of `settings` as a user writes it: no `pool_mode`, password included (for a subprocess).
    private static func url(_ settings: ConnectionSettings) -> String {
        "postgres://\(settings.user):\(settings.password ?? "")@\(settings.host):\(settings.port)/\(settings.database)?sslmode=disable"
    }

    /// `structpg migrate up` in fresh processes through the pooler with the defaults (no `pool_mode`): each process
    /// names its statements from the start, as the one before did on the same server sessions.
    @Test func migrationsThroughThePoolerWithTheDefaultsApplyInEveryFreshProcess() async throws {
        let files = try MigrationFiles([
            "0001_tallies.sql": "-- migrate:up\nCREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL);\n",
            "0002_note.sql": "-- migrate:up\nALTER TABLE tallies ADD COLUMN note text;\n",
        ])
        defer { files.remove() }
        try await withPooler(poolSize: 2) { direct, pooled in
            let cli = CLI(databaseURL: Self.url(pooled), migrations: files.directory)
            let first = try await cli.run("migrate", "up")
            #expect(first.status == 0, "\(first.errors)")
            for version in 3...7 {
                try files.write(
                    String(format: "%04d_step.sql", version), "-- migrate:up\nALTER TABLE tallies ADD COLUMN c\(version) integer;\n")
                if version == 5 {
                    // Two racing processes, then one alone.
                    async let a = cli.run("migrate", "up")
                    async let b = cli.run("migrate", "up")
                    let (ra, rb) = try await (a, b)
                    #expect(ra.status == 0 && rb.status == 0, "\(ra.errors) \(rb.errors)")
                } else {
                    let run = try await cli.run("migrate", "up")
                    #expect(run.status == 0, "version \(version): \(run.errors)")
                }
            }
            try await Self.service(direct) { service in
                let history = try await service.query(
                    "SELECT version, count(*)::int8 FROM structpg_migrations WHERE state = 'applied' GROUP BY version ORDER BY version")
                #expect(try history.map { try $0.decode((Int64, Int64).self) }.map { [$0.0, $0.1] } == (1...7).map { [Int64($0), 1] })
            }
        }
    }

    /// Observing through the pooler with the defaults: `LISTEN` would succeed on a server session the pooler hands
    /// to others, and no change would ever arrive. It is refused by name instead.
    @Test func observingThroughThePoolerWithTheDefaultsIsRefusedByName() async throws {
        try await withPooler(poolSize: 2) { direct, pooled in
            try await Self.service(direct) { service in
                try await service.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
                try await service.installChangeNotifications(on: ["tallies"])
            }
            try await Self.service(pooled) { service in
                let error = await #expect(throws: StructPostgresError.self) {
                    for try await _ in service.observe(Tally.self) { break }
                }
                #expect(error?.code == .invalidConfiguration)
                #expect(error?.message.contains("listenerConnection") == true, "\(error.map { "\($0)" } ?? "")")
            }
            // Directly, the same check lets the observer through.
            try await Self.service(direct) { service in
                var results = service.observe(Tally.self).makeAsyncIterator()
                #expect(try await results.next()?.isEmpty == true)
                try await service.update(entities: [Tally(uuid: UUID(), count: 1)])
                #expect(try await results.next()?.count == 1)
            }
        }
    }

    @Test func observingThroughThePoolerNeedsTheListenerConnectionAndWorksWithIt() async throws {
        try await withPooler { direct, pooled in
            try await Self.service(direct) { service in
                try await service.execute(unsafeSQL: "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)")
                try await service.installChangeNotifications(on: ["tallies"])
            }
            var settings = pooled
            settings.poolMode = .transaction
            try await Self.service(settings) { service in
                let error = await #expect(throws: StructPostgresError.self) {
                    for try await _ in service.observe(Tally.self) { break }
                }
                #expect(error?.message.contains("listenerConnection") == true)
            }
            var configuration = PostgresService.Configuration(connection: settings)
            configuration.listenerConnection = direct
            try await PostgresService.withService(configuration: configuration) { service in
                var results = service.observe(Tally.self).makeAsyncIterator()
                #expect(try await results.next()?.isEmpty == true)
                try await service.update(entities: [Tally(uuid: UUID(), count: 1)])
                #expect(try await results.next()?.count == 1)
            }
        }
    }
}
