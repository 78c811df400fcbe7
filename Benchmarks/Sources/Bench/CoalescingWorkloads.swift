import Foundation
import Logging
import StructPostgres

/// W4c: single-row upserts with coalescing on (``WriteCoalescing``) against hand-written PostgresNIO, one statement
/// per call: W4 (8 tasks x 500) and W4b (64 tasks x 100), both through a pool of 8, with the throwaway server's
/// settings (fsync and synchronous_commit off) and with PostgreSQL's defaults (both on), where each commit waits
/// for the disk and coalescing saves commits. Then W3 with coalescing on against off: what a lone call pays.
extension Bench {
    func coalescedUpserts(_ report: inout Report, _ settings: ConnectionSettings) async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 8), logger: logger)
        configuration.coalescing = WriteCoalescing()
        try await PostgresService.withService(configuration: configuration) { coalescing in
            for durable in serverIsLocal ? [false, true] : [false] {
                if durable { try await setDurability(on: true) }
                let setting = durable ? "fsync on" : "fsync off"
                for (name, tasks, perTask, target) in [("W4", 8, options.singles / 4, 1.2), ("W4b", 64, options.singles / 20, 1.5)] {
                    let workload = "\(name) \(tasks) tasks x \(perTask) coalesced, \(setting)"
                    var statements: [Double] = []
                    let throughput = try await rounds(options.rounds, fluent: false) { contender in
                        try await seed(books: tasks * perTask / 2)
                        let before = try await committedTransactions()
                        let seconds = try await Report.seconds {
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                for task in 0..<tasks {
                                    group.addTask {
                                        for index in 0..<perTask {
                                            let book = BenchData.book(task * perTask + index, authors: options.authors, version: 5)
                                            switch contender {
                                            case .handWritten: try await hand.upsertOne(book)
                                            case .library, .fluent: try await coalescing.update(entities: [book])
                                            }
                                        }
                                    }
                                }
                                try await group.waitForAll()
                            }
                        }
                        if contender == .library { statements.append(Double(try await committedTransactions() - before - 1)) }
                        try await verify(BenchData.books(0..<(tasks * perTask), authors: options.authors, version: 5), contender.rawValue, total: tasks * perTask)
                        return Double(tasks * perTask) / seconds
                    }
                    report.add(workload, unit: "rows/s", rounds: throughput, target: .atLeast(target))
                    report.note(workload, "StructPostgres", "\(Int(Report.median(statements))) commits for \(tasks * perTask) calls (median; hand-written: one each)")
                }
                if durable { try await setDurability(on: false) }
            }
            try await loneCallCost(coalescing)
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
        say("W3 single upsert, coalescing on / off: p50 \(Int(on)) µs against \(Int(off)) µs = \(format(ratio)) (target <= 1.10: \(ratio <= 1.10 ? "met" : "missed")); p99 \(Int(Report.percentile(latencies[true]!, 0.99))) µs against \(Int(Report.percentile(latencies[false]!, 0.99))) µs")
    }

    /// PostgreSQL's default durability (`on`: every commit waits for its WAL to reach the disk), or the throwaway
    /// server's own settings back.
    private func setDurability(on: Bool) async throws {
        let sql = on
            ? "ALTER SYSTEM SET fsync = on; ALTER SYSTEM SET synchronous_commit = on"
            : "ALTER SYSTEM RESET fsync; ALTER SYSTEM RESET synchronous_commit"
        for statement in sql.split(separator: ";") { try await service.execute(unsafeSQL: String(statement)) }
        try await service.execute(unsafeSQL: "SELECT pg_reload_conf()")
        try await Task.sleep(for: .milliseconds(200))
        let state = try await service.query("SELECT current_setting('fsync') || '/' || current_setting('synchronous_commit')")[0].decode(String.self)
        say("server durability now: fsync/synchronous_commit = \(state)")
    }

    /// The next transaction id: the write transactions between two readings are their difference less one (the
    /// reading's own).
    private func committedTransactions() async throws -> Int {
        Int(try await service.query("SELECT pg_current_xact_id()::text::int8")[0].decode(Int64.self))
    }
}
