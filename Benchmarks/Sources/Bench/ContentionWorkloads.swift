import Foundation
import PostgresNIO
import StructPostgres
import Synchronization

/// W4b: 64 tasks x 100 single upserts through a pool of 8, where most calls must wait for a connection. The library
/// with its default configuration (concurrent single-row upserts coalesced) against hand-written contenders, each
/// in rounds of its own against it: code on 8 held connections (the 6,400 upserts shared among 8 workers, each on a
/// connection it holds: the fastest hand-written code can be), 64 tasks leasing from PostgresNIO's pool per call, 64
/// tasks queued on 8 held connections; and, for reference, the library with coalescing off against the held
/// connections.
extension Bench {
    func contendedUpserts(_ report: inout Report, _ settings: ConnectionSettings) async throws {
        let (tasks, perTask, connections) = (64, options.singles / 20, 8)
        var plain = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: connections), logger: Self.quiet)
        plain.coalescing = nil
        try await PostgresService.withService(configuration: plain) { uncoalesced in
            for variant in ["8 held connections", "a lease per call", "8 queued connections", "8 held connections, coalescing off"] {
                let library = variant.hasSuffix("coalescing off") ? uncoalesced : service
                let workload = "W4b \(tasks) tasks x \(perTask) upserts, against \(variant)"
                let throughput = try await rounds(options.shortRounds, fluent: false) { contender in
                    try await seed(books: tasks * perTask / 2)
                    let seconds = try await Report.seconds {
                        switch (contender, variant) {
                        case (.handWritten, _) where variant.hasPrefix("8 held connections"):
                            let next = Counter()
                            let (hand, options) = (self.hand, self.options)
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                for _ in 0..<connections {
                                    group.addTask {
                                        try await hand.client.withConnection { connection in
                                            while true {
                                                let index = next.value.add(1, ordering: .relaxed).oldValue
                                                guard index < tasks * perTask else { return }
                                                try await hand.upsertOne(
                                                    BenchData.book(index, authors: options.authors, version: 6), on: connection)
                                            }
                                        }
                                    }
                                }
                                try await group.waitForAll()
                            }
                        case (.handWritten, "8 queued connections"):
                            let (hand, options) = (self.hand, self.options)
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                for holder in 0..<connections {
                                    group.addTask {
                                        try await hand.client.withConnection { connection in
                                            try await withThrowingTaskGroup(of: Void.self) { inner in
                                                for sub in 0..<(tasks / connections) {
                                                    inner.addTask {
                                                        let task = holder * (tasks / connections) + sub
                                                        for index in 0..<perTask {
                                                            try await hand.upsertOne(
                                                                BenchData.book(
                                                                    task * perTask + index, authors: options.authors, version: 6),
                                                                on: connection)
                                                        }
                                                    }
                                                }
                                                try await inner.waitForAll()
                                            }
                                        }
                                    }
                                }
                                try await group.waitForAll()
                            }
                        case (.handWritten, _):
                            try await upsertConcurrently(tasks: tasks, perTask: perTask, version: 6) { try await hand.upsertOne($0) }
                        default:
                            try await upsertConcurrently(tasks: tasks, perTask: perTask, version: 6) {
                                try await library.update(entities: [$0])
                            }
                        }
                    }
                    try await verify(
                        BenchData.books(0..<(tasks * perTask), authors: options.authors, version: 6), contender.rawValue,
                        total: tasks * perTask)
                    return Double(tasks * perTask) / seconds
                }
                report.add(workload, unit: "rows/s", rounds: throughput, target: .atLeast(variant.hasSuffix("off") ? 1.0 : 2.0))
            }
        }
    }
}

/// A counter shared by tasks.
final class Counter: Sendable {
    let value = Atomic(0)
}
