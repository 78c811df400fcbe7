import Foundation
import Logging
import PostgresNIO
import StructPostgres
import StructPostgresTesting

/// W4c: single-row upserts with coalescing on (``WriteCoalescing``) against hand-written PostgresNIO, one statement
/// per call: W4 (8 tasks x 500) and W4b (64 tasks x 100), both through a pool of 8, on the throwaway server (fsync
/// and synchronous_commit off) and on a second one with PostgreSQL's defaults (both on), where each commit waits
/// for the disk and coalescing saves commits. Then W3 with coalescing on against off: what a lone call pays.
extension Bench {
    /// W4 and W4b with coalescing on, on this bench's server; `setting` names its durability in the workload names.
    /// With `lone`, W3 with coalescing on against off too.
    func coalescedUpserts(_ report: inout Report, _ settings: ConnectionSettings, setting: String, lone: Bool) async throws {
        var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 8), logger: Self.quiet)
        configuration.coalescing = WriteCoalescing()
        try await PostgresService.withService(configuration: configuration) { coalescing in
            let state = try await service.query("SELECT current_setting('fsync') || '/' || current_setting('synchronous_commit')")[0]
                .decode(String.self)
            say("W4c on a server with fsync/synchronous_commit = \(state)")
            for (name, tasks, perTask, target) in [("W4", 8, options.singles / 4, 1.2), ("W4b", 64, options.singles / 20, 1.5)] {
                let workload = "\(name) \(tasks) tasks x \(perTask) coalesced, \(setting)"
                var commits: [Double] = []
                var cpu: [Contender: [CPUTime]] = [:]
                let throughput = try await rounds(options.shortRounds, fluent: false) { contender in
                    try await seed(books: tasks * perTask / 2)
                    let before = try await nextTransaction()
                    let cpuStart = CPUTime.now(server: serverIsLocal)
                    let seconds = try await Report.seconds {
                        try await upsertConcurrently(tasks: tasks, perTask: perTask, version: 5) { book in
                            switch contender {
                            case .handWritten: try await hand.upsertOne(book)
                            case .library, .fluent: try await coalescing.update(entities: [book])
                            }
                        }
                    }
                    cpu[contender, default: []].append(CPUTime.now(server: serverIsLocal) - cpuStart)
                    if contender == .library { commits.append(Double(try await nextTransaction() - before - 1)) }
                    try await verify(
                        BenchData.books(0..<(tasks * perTask), authors: options.authors, version: 5), contender.rawValue,
                        total: tasks * perTask)
                    return Double(tasks * perTask) / seconds
                }
                report.add(workload, unit: "rows/s", rounds: throughput, target: .atLeast(target))
                report.noteCPU(workload, cpu) { "\(Int($0 * 1e6 / Double(tasks * perTask))) µs per upsert" }
                report.note(
                    workload, "StructPostgres",
                    "\(Int(Report.median(commits))) commits for \(tasks * perTask) calls (median; hand-written: one each)")
            }
            if lone { try await loneCallCost(coalescing) }
        }
    }

    static var quiet: Logger {
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        return logger
    }

    /// Runs W4c again on a server of its own with PostgreSQL's default durability, migrated as the main one.
    static func coalescedUpsertsDurably(_ report: inout Report, options: Options, migrations: URL) async throws {
        let cluster = try LocalPostgresCluster.start(durable: true)
        defer { cluster.stop() }
        let pool = PoolOptions(maxConnections: 8)
        let client = PostgresClient(configuration: try cluster.settings.clientConfiguration(pool: pool), backgroundLogger: quiet)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await PostgresService.withService(configuration: .init(connection: cluster.settings, pool: pool, logger: quiet)) {
                service in
                _ = try await Migrator(service: service, migrations: try MigrationSet(directory: migrations)).migrate()
                let bench = Bench(service: service, hand: HandWritten(client: client), fluent: nil, options: options, serverIsLocal: true)
                try await bench.coalescedUpserts(&report, cluster.settings, setting: "fsync on", lone: false)
            }
        }
    }

    /// W3's sequential single upserts through a service with coalescing on and one with it off, call by call.
    private func loneCallCost(_ coalescing: PostgresService) async throws {
        try await seed(books: options.singles)
        var latencies: [Bool: [Double]] = [:]
        for index in -50..<options.singles {
            let book = BenchData.book(max(index, 0), authors: options.authors, version: 6)
            for on in index.isMultiple(of: 2) ? [true, false] : [false, true] {
                let seconds = try await Report.seconds { try await (on ? coalescing : service).update(entities: [book]) }
                if index >= 0 { latencies[on, default: []].append(seconds * 1e6) }
            }
        }
        let (on, off) = (Report.percentile(latencies[true]!, 0.5), Report.percentile(latencies[false]!, 0.5))
        let ratio = on / off
        say(
            "W3 single upsert, coalescing on / off: p50 \(Int(on)) µs against \(Int(off)) µs = \(format(ratio)) (target <= 1.10: \(ratio <= 1.10 ? "met" : "missed")); p99 \(Int(Report.percentile(latencies[true]!, 0.99))) µs against \(Int(Report.percentile(latencies[false]!, 0.99))) µs"
        )
    }

    /// The next transaction id: the write transactions between two readings are their difference less one (the
    /// reading's own).
    private func nextTransaction() async throws -> Int {
        Int(try await service.query("SELECT pg_current_xact_id()::text::int8")[0].decode(Int64.self))
    }
}
