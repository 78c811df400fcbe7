import Foundation
import Logging
import PostgresNIO
import StructPostgres
import StructPostgresTesting

// `scripts/bench.sh [options]`: starts a throwaway PostgreSQL (or uses DATABASE_URL), applies ../migrations,
// runs each workload for each contender in one process against one server, verifies every result in the
// database, and prints one line per workload and contender with the ratio to hand-written PostgresNIO.
let options: Options
do {
    options = try Options(CommandLine.arguments)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
var cluster: LocalPostgresCluster?
let settings: ConnectionSettings
if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty {
    settings = try ConnectionSettings.fromEnvironment()
} else {
    cluster = try LocalPostgresCluster.start(durable: options.durable)
    settings = cluster!.settings
}
defer { cluster?.stop() }

let logger = Bench.quiet
let pool = PoolOptions(maxConnections: 8)
let client = PostgresClient(configuration: try settings.clientConfiguration(pool: pool), backgroundLogger: logger)
let fluent = options.fluent ? FluentContender.start(settings, connections: 8) : nil

try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { await client.run() }
    defer { group.cancelAll() }
    try await PostgresService.withService(configuration: .init(connection: settings, pool: pool, logger: logger)) { service in
        let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../migrations")
            .standardized
        _ = try await Migrator(service: service, migrations: try MigrationSet(directory: migrations)).migrate()
        // Autovacuum waking up in the middle of a measurement is noise, not a contender's cost.
        for table in ["authors", "books", "reviews", "stores", "store_books", "users"] {
            try await service.execute(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = false)")
        }
        if cluster != nil {
            // A checkpoint forced by WAL volume in the middle of a 1,000,000-row write lands in one contender's run
            // and not another's; the bench checkpoints after seeding instead (a server of the user's is left alone).
            try await service.execute(unsafeSQL: "ALTER SYSTEM SET max_wal_size = '8GB'")
            try await service.execute(unsafeSQL: "SELECT pg_reload_conf()")
        }
        let durability = try await service.query("SELECT current_setting('fsync')")[0].decode(String.self)
        let machine =
            "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, server fsync \(durability)"
        say(
            "StructPostgres benchmarks: \(options.books) books, \(options.authors) authors, \(options.reviews) reviews, \(options.rounds) rounds (\(options.shortRounds) for calls under three seconds, \(options.hugeBatchRounds) for W1 at 1,000,000 rows), ratios the median of each round's; \(machine)"
        )
        var report = Report()
        let bench = Bench(
            service: service, hand: HandWritten(client: client), fluent: fluent, options: options, serverIsLocal: cluster != nil)
        let run = options.workloads
        // W7 first: its peak memory is the process's, before the other workloads have grown the heap.
        if run.contains("W7") { try await bench.streaming(&report) }
        if run.contains("W1") { for size in options.sizes { try await bench.bulkUpsert(&report, count: size) } }
        if run.contains("W2") { try await bench.fetches(&report) }
        if run.contains("W2C") { try await bench.contendedReads(&report, settings) }
        if run.contains("W3") {
            try await bench.singleUpserts(&report)
            try await bench.singleUpsertsPlainStatement()
        }
        if run.contains("W4") { try await bench.concurrentUpserts(&report) }
        if run.contains("W4B") { try await bench.contendedUpserts(&report, settings) }
        if run.contains("W4C") {
            let setting = cluster == nil ? "this server" : options.durable ? "fsync on" : "fsync off"
            try await bench.coalescedUpserts(&report, settings, setting: setting, lone: true)
            if cluster != nil, !options.durable {
                try await Bench.coalescedUpsertsDurably(&report, options: options, migrations: migrations)
            }
        }
        if run.contains("W5") { try await bench.deleteHalf(&report, count: options.books) }
        if run.contains("W6") { try await bench.graph(&report) }
        if run.contains("W8") { try await bench.observation(&report) }
        if run.contains("W9") { try await bench.telemetryCost(settings) }
        if run.contains("W10") { try await bench.figuresAndPages(&report) }
        if run.contains("WV") { try await bench.versionCost() }
        if run.contains("PGB") { try await bench.throughPooler(cluster) }
        if run.contains("P") { try await bench.pointCalls() }
        if options.markdown { say("\n" + report.markdown()) }
    }
}
await fluent?.shutdown()
