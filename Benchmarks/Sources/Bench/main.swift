import Foundation
import Logging
import PostgresNIO
import StructPostgres
import StructPostgresTesting

/// `swift run -c release Bench [--books N] [--authors N] [--rounds N]`: starts a throwaway PostgreSQL
/// (or uses DATABASE_URL), applies ../migrations, runs each workload for each contender in one process
/// against one server, verifies the result in the database, prints one line per workload and contender.
struct Options {
    var books = 10_000
    var authors = 1_000
    var rounds = 3
    var singles = 2_000

    init(_ arguments: [String]) throws {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            guard let value = iterator.next().flatMap(Int.init) else { throw BenchError("\(flag) needs a number") }
            switch flag {
            case "--books": books = value
            case "--authors": authors = value
            case "--rounds": rounds = value
            case "--singles": singles = value
            default: throw BenchError("unknown option \(flag); use --books, --authors, --rounds, --singles")
            }
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let options = try Options(CommandLine.arguments)
var cluster: LocalPostgresCluster?
let settings: ConnectionSettings
if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty {
    settings = try ConnectionSettings.fromEnvironment()
} else {
    cluster = try LocalPostgresCluster.start()
    settings = cluster!.settings
}
defer { cluster?.stop() }

var logger = Logger(label: "bench")
logger.logLevel = .error
let pool = PoolOptions(maxConnections: 8)
let client = PostgresClient(configuration: try settings.clientConfiguration(pool: pool), backgroundLogger: logger)

try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { await client.run() }
    defer { group.cancelAll() }
    try await PostgresService.withService(configuration: .init(connection: settings, pool: pool, logger: logger)) { service in
        let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../migrations").standardized
        _ = try await Migrator(service: service, migrations: try MigrationSet(directory: migrations)).migrate()
        print("StructPostgres benchmarks: \(options.books) books, \(options.authors) authors, median of \(options.rounds) rounds, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        var report = Report()
        let workloads = Workloads(service: service, hand: HandWritten(client: client), options: options)
        try await workloads.bulkUpsert(&report, count: options.books)
        try await workloads.singleUpserts(&report)
        try await workloads.deleteHalf(&report, count: options.books)
    }
}
