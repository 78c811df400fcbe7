import Foundation
import StructPostgres

/// The workloads, each run for both contenders on the same data, alternating rounds, verified after each.
struct Workloads {
    let service: PostgresService
    let hand: HandWritten
    let options: Options

    /// Empty tables, the authors, and the first half of the books at version 0.
    private func reset(books: Int) async throws {
        try await service.execute(unsafeSQL: "TRUNCATE reviews, store_books, books, stores, authors CASCADE")
        for chunk in stride(from: 0, to: options.authors, by: 50_000) {
            try await service.update(entities: BenchData.authors(options.authors)[chunk..<min(options.authors, chunk + 50_000)].map { $0 })
        }
        for chunk in stride(from: 0, to: books / 2, by: 50_000) {
            try await hand.upsert(BenchData.books(chunk..<min(books / 2, chunk + 50_000), authors: options.authors, version: 0))
        }
    }

    /// W1: N books, half new, half existing with every field changed, one call.
    func bulkUpsert(_ report: inout Report, count: Int) async throws {
        let books = BenchData.books(0..<count, authors: options.authors, version: 1)
        var times: [String: [Double]] = [:]
        for _ in 0..<options.rounds {
            for contender in ["hand-written", "StructPostgres"] {
                try await reset(books: count)
                let seconds = try await Report.seconds {
                    if contender == "hand-written" { try await hand.upsert(books) } else { try await service.update(entities: books) }
                }
                try await verify(books, contender)
                times[contender, default: []].append(seconds)
            }
        }
        report.compare(
            "W1 upsert \(count) books", unit: "rows/s", better: .higher,
            handWritten: Double(count) / Report.median(times["hand-written"]!),
            library: Double(count) / Report.median(times["StructPostgres"]!), target: ">= 0.90")
    }

    /// W3: sequential single-book upserts; p50 and p99 latency.
    func singleUpserts(_ report: inout Report) async throws {
        var latencies: [String: [Double]] = [:]
        try await reset(books: 2 * options.singles)
        for contender in ["hand-written", "StructPostgres"] {
            let books = BenchData.books(0..<options.singles, authors: options.authors, version: contender == "hand-written" ? 2 : 3)
            for book in books.prefix(50) {  // warm-up: connections, prepared statements, catalog
                if contender == "hand-written" { try await hand.upsertOne(book) } else { try await service.update(entities: [book]) }
            }
            for book in books {
                let seconds = try await Report.seconds {
                    if contender == "hand-written" { try await hand.upsertOne(book) } else { try await service.update(entities: [book]) }
                }
                latencies[contender, default: []].append(seconds * 1_000_000)
            }
            try await verify(books, contender)
        }
        for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
            report.compare(
                "W3 single upsert \(name)", unit: "µs", better: .lower,
                handWritten: Report.percentile(latencies["hand-written"]!, p),
                library: Report.percentile(latencies["StructPostgres"]!, p), target: name == "p50" ? "<= 1.15" : "-")
        }
    }

    /// W5: delete half of N books by uuid.
    func deleteHalf(_ report: inout Report, count: Int) async throws {
        let doomed = BenchData.books(0..<(count / 2), authors: options.authors, version: 0)
        var times: [String: [Double]] = [:]
        for _ in 0..<options.rounds {
            for contender in ["hand-written", "StructPostgres"] {
                try await reset(books: count * 2)
                let seconds = try await Report.seconds {
                    if contender == "hand-written" { try await hand.delete(doomed.map(\.uuid)) } else { try await service.delete(entities: doomed) }
                }
                let left = try await hand.count("books")
                guard left == count - count / 2 else { throw BenchError("W5 \(contender): \(left) books left, expected \(count - count / 2)") }
                times[contender, default: []].append(seconds)
            }
        }
        report.compare(
            "W5 delete \(count / 2) books", unit: "rows/s", better: .higher,
            handWritten: Double(count / 2) / Report.median(times["hand-written"]!),
            library: Double(count / 2) / Report.median(times["StructPostgres"]!), target: ">= 0.90")
    }

    /// Every book is stored, and a sample holds exactly what was written.
    private func verify(_ books: [BenchBook], _ contender: String) async throws {
        let stored = try await hand.count("books")
        guard stored >= books.count else { throw BenchError("\(contender): \(stored) books stored, expected at least \(books.count)") }
        for book in stride(from: 0, to: books.count, by: max(1, books.count / 20)).map({ books[$0] }) {
            guard try await hand.book(book.uuid) == book else { throw BenchError("\(contender): book \(book.uuid) differs from what was written") }
        }
    }
}
