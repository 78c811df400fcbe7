import Foundation
import StructPostgres
import Synchronization

/// W8: change observation. Commit-to-delivery latency of a one-row change with 1 and with 100 observers, against
/// the re-fetch's own time; and what the notification triggers cost writes (W1 and W3 with the triggers installed
/// over without, in alternating rounds). Run last: it installs triggers on `books` and removes them at the end.
extension Bench {
    func observation(_ report: inout Report) async throws {
        try await seed(books: options.books)
        let book = BenchData.book(0, authors: options.authors, version: 0)
        let changes = options.singles / 10
        var refetch: [Double] = []
        for _ in 0..<changes {
            refetch.append(try await Report.seconds { _ = try await service.fetch(BenchBook.self, where: .equal("uuid", book.uuid), loading: .none) } * 1_000_000)
        }
        try await service.installChangeNotifications(on: ["books"])
        for observers in [1, 100] {
            let latencies = try await deliveryLatencies(observers: observers, changes: changes, book: book)
            let (p50, p99) = (Report.median(latencies), latencies.sorted()[latencies.count * 99 / 100])
            say("W8 commit to delivery, \(observers) observer\(observers == 1 ? "" : "s") (\(changes) changes): p50 \(Int(p50)) µs, p99 \(Int(p99)) µs; the re-fetch alone: p50 \(Int(Report.median(refetch))) µs (target: p50 within 2,000 µs of it: \(p50 - Report.median(refetch) <= 2_000 ? "met" : "missed"))")
        }
        try await triggerCost()
        try await service.execute(unsafeSQL: "SELECT structpg_unobserve('books')")
    }

    /// For each change, the time from the writer's commit until every observer has yielded the changed row (for
    /// 100 observers: each observer's own delivery time).
    private func deliveryLatencies(observers: Int, changes: Int, book: BenchBook) async throws -> [Double] {
        let delivered = Mutex<[Int: [ContinuousClock.Instant]]>([:])  // price -> delivery instants
        let started = Mutex(0)
        let tasks = (0..<observers).map { _ in
            Task {
                var first = true
                for try await result in service.observe(BenchBook.self, where: .equal("uuid", book.uuid), loading: .none) {
                    let now = ContinuousClock.now
                    if first { started.withLock { $0 += 1 }; first = false }
                    if let price = result.first?.price { delivered.withLock { $0[Int(price), default: []].append(now) } }
                }
            }
        }
        defer { for task in tasks { task.cancel() } }
        while started.withLock({ $0 }) < observers { try await Task.sleep(for: .milliseconds(5)) }
        var latencies: [Double] = []
        for change in 0..<changes {
            var changed = book
            changed.price = Double(1_000_000 + change)
            try await service.update(entities: [changed])
            let committed = ContinuousClock.now
            let deadline = committed + .seconds(10)
            while delivered.withLock({ $0[1_000_000 + change]?.count ?? 0 }) < observers {
                guard ContinuousClock.now < deadline else { throw BenchError("W8: change \(change) did not reach every observer") }
                try await Task.sleep(for: .microseconds(100))
            }
            for instant in delivered.withLock({ $0[1_000_000 + change]! }) {
                let elapsed = instant - committed
                latencies.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
            }
        }
        return latencies
    }

    /// W1 (10,000 books) and W3 (single upserts) with the triggers installed over without, in alternating rounds.
    private func triggerCost() async throws {
        let count = options.sizes.first ?? 10_000
        var batchRatios: [Double] = []
        var singleRatios: [Double] = []
        for round in 0..<(options.rounds * 2 + 1) {
            var seconds: [Bool: Double] = [:]
            var singles: [Bool: Double] = [:]
            for withTriggers in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                try await service.execute(unsafeSQL: withTriggers ? "SELECT structpg_observe('books')" : "SELECT structpg_unobserve('books')")
                try await seed(books: count / 2)
                let books = BenchData.books(0..<count, authors: options.authors, version: round + 1)
                seconds[withTriggers] = try await Report.seconds { try await service.update(entities: books) }
                var times: [Double] = []
                for index in 0..<100 {
                    let book = BenchData.book(index, authors: options.authors, version: round + 100)
                    times.append(try await Report.seconds { try await service.update(entities: [book]) })
                }
                singles[withTriggers] = Report.median(times)
            }
            batchRatios.append(seconds[false]! / seconds[true]!)
            singleRatios.append(singles[false]! / singles[true]!)
        }
        let (batch, single) = (Report.median(batchRatios), Report.median(singleRatios))
        say("W8 trigger cost: W1 \(count) books with the triggers at \(format(batch)) of the speed without, single upserts at \(format(single)) (targets >= 0.95: \(batch >= 0.95 ? "met" : "missed"), \(single >= 0.95 ? "met" : "missed"))")
    }
}
