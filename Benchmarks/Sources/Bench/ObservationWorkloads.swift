import Foundation
import StructPostgres
import Synchronization

/// W8: change observation. Commit-to-delivery latency of a one-row change with 1 and with 100 observers, against
/// the re-fetch's own time; and what the notification triggers cost writes (W1 and W3 with the triggers installed
/// over without, in alternating rounds). Run last: it installs triggers on `books` and removes them at the end.
extension Bench {
    func observation(_ report: inout Report) async throws {
        // The triggers' cost first, before any observer listens: what every write pays, listened to or not.
        try await service.installChangeNotifications(on: [])
        try await triggerCost(keys: false)
        try await triggerCost(keys: true)
        try await seed(books: options.books)
        let book = BenchData.book(0, authors: options.authors, version: 0)
        let changes = options.singles / 10
        var refetch: [Double] = []
        for _ in 0..<changes {
            refetch.append(
                try await Report.seconds { _ = try await service.fetch(BenchBook.self, where: .equal("uuid", book.uuid), loading: .none) }
                    * 1_000_000)
        }
        try await service.installChangeNotifications(on: ["books"])
        for observers in [1, 100] {
            let latencies = try await deliveryLatencies(observers: observers, changes: changes, book: book)
            let (p50, p99) = (Report.median(latencies), latencies.sorted()[latencies.count * 99 / 100])
            say(
                "W8 commit to delivery, \(observers) observer\(observers == 1 ? "" : "s") (\(changes) changes): p50 \(Int(p50)) µs, p99 \(Int(p99)) µs; the re-fetch alone: p50 \(Int(Report.median(refetch))) µs (target: p50 within 2,000 µs of it: \(p50 - Report.median(refetch) <= 2_000 ? "met" : "missed"))"
            )
        }
        try await service.execute(unsafeSQL: "SELECT structpg_unobserve('books')")
    }

    /// For each change, the time from the writer's commit until every observer has yielded the changed row (for
    /// 100 observers: each observer's own delivery time).
    private func deliveryLatencies(observers: Int, changes: Int, book: BenchBook) async throws -> [Double] {
        let deliveries = Deliveries()
        let tasks = (0..<observers).map { [service] _ in
            Task {
                var first = true
                for try await result in service.observe(BenchBook.self, where: .equal("uuid", book.uuid), loading: .none) {
                    let now = ContinuousClock.now
                    if first { deliveries.started.withLock { $0 += 1 }; first = false }
                    if let price = result.first?.price { deliveries.times.withLock { $0[Int(price), default: []].append(now) } }
                }
            }
        }
        defer { for task in tasks { task.cancel() } }
        while deliveries.started.withLock({ $0 }) < observers { try await Task.sleep(for: .milliseconds(5)) }
        var latencies: [Double] = []
        for change in 0..<changes {
            var changed = book
            changed.price = Double(1_000_000 + change)
            try await service.update(entities: [changed])
            let committed = ContinuousClock.now
            let deadline = committed + .seconds(10)
            while deliveries.times.withLock({ $0[1_000_000 + change]?.count ?? 0 }) < observers {
                guard ContinuousClock.now < deadline else { throw BenchError("W8: change \(change) did not reach every observer") }
                try await Task.sleep(for: .microseconds(100))
            }
            for instant in deliveries.times.withLock({ $0[1_000_000 + change]! }) {
                let elapsed = instant - committed
                latencies.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
            }
        }
        return latencies
    }

    /// W1 (10,000 books) and W3 (single upserts) into `books` with the triggers over an identical table without
    /// them (`books_plain`): single upserts alternate call by call, batches round by round.
    private func triggerCost(keys: Bool) async throws {
        let count = options.sizes.first ?? 10_000
        try await seed(books: count / 2)
        try await service.execute(
            unsafeSQL: """
                CREATE TABLE books_plain (LIKE books INCLUDING ALL);
                ALTER TABLE books_plain ADD FOREIGN KEY (author_id) REFERENCES authors (uuid);
                INSERT INTO books_plain SELECT * FROM books;
                ANALYZE books_plain;
                """)
        try await service.installChangeNotifications(on: ["books"], keys: keys)
        var batchRatios: [Double] = []
        var singles: [Bool: [Double]] = [:]
        let newHalf = BenchData.books((count / 2)..<count, authors: options.authors, version: 0)
        for round in 0..<(options.rounds * 2 + 1) {
            // Half of the batch new, half existing, in both tables.
            try await service.delete(entities: newHalf)
            try await service.delete(entities: newHalf.map(PlainBook.init))
            try await settle()
            let books = BenchData.books(0..<count, authors: options.authors, version: round + 1)
            var seconds: [Bool: Double] = [:]
            for withTriggers in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                seconds[withTriggers] = try await Report.seconds {
                    if withTriggers {
                        try await service.update(entities: books)
                    } else {
                        try await service.update(entities: books.map(PlainBook.init))
                    }
                }
            }
            batchRatios.append(seconds[false]! / seconds[true]!)
            for index in 0..<100 {
                let book = BenchData.book(index, authors: options.authors, version: round + 100)
                for withTriggers in index.isMultiple(of: 2) ? [true, false] : [false, true] {
                    singles[withTriggers, default: []].append(
                        try await Report.seconds {
                            if withTriggers {
                                try await service.update(entities: [book])
                            } else {
                                try await service.update(entities: [PlainBook(book)])
                            }
                        })
                }
            }
        }
        try await service.execute(unsafeSQL: "DROP TABLE books_plain")
        service.forgetSchemaCache()
        let batch = Report.median(batchRatios)
        let single = Report.median(singles[false]!) / Report.median(singles[true]!)
        say(
            "W8 trigger cost\(keys ? " with keys" : ""): W1 \(count) books with the triggers at \(format(batch)) of the speed without, single upserts at \(format(single)) (p50 \(Int(Report.median(singles[true]!) * 1e6)) µs against \(Int(Report.median(singles[false]!) * 1e6)) µs; targets >= 0.95: \(batch >= 0.95 ? "met" : "missed"), \(single >= 0.95 ? "met" : "missed"))"
        )
    }
}

/// A book of `books_plain`, the table without triggers.
private struct PlainBook: StoredModel {
    static let table = "books_plain"
    let uuid: UUID
    var title: String
    var price: Double
    var publisher: String
    var authorID: UUID

    init(_ book: BenchBook) {
        (uuid, title, price, publisher, authorID) = (book.uuid, book.title, book.price, book.publisher, book.authorID)
    }
}

/// When each observer received each change (by the price the change wrote), and how many have started.
private final class Deliveries: Sendable {
    let times = Mutex<[Int: [ContinuousClock.Instant]]>([:])
    let started = Mutex(0)
}
