import Foundation
import PostgresNIO
import StructPostgres

/// W2c: 64 tasks x 100 point reads of W2's shape (a book's reviews, sorted) through a pool of 8, the library with its
/// default configuration (concurrent point reads coalesced) against hand-written code on 8 held connections (6,400
/// reads shared among 8 workers, each on a connection it holds) and 64 tasks leasing from PostgresNIO's pool per
/// call; and, for reference, the library with read coalescing off against the held connections.
extension Bench {
    func contendedReads(_ report: inout Report, _ settings: ConnectionSettings) async throws {
        let (tasks, perTask, connections) = (64, options.singles / 20, 8)
        let (books, reviews) = (options.books, options.reviews)
        try await seed(books: books, reviews: reviews)
        func book(_ index: Int) -> UUID { BenchData.uuid(2, (index * 7_919) % books) }
        var plain = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: connections), logger: Self.quiet)
        plain.readCoalescing = nil
        try await PostgresService.withService(configuration: plain) { uncoalesced in
            for variant in ["8 held connections", "a lease per call", "8 held connections, coalescing off"] {
                let library = variant.hasSuffix("coalescing off") ? uncoalesced : service
                let throughput = try await rounds(options.shortRounds, fluent: false) { contender in
                    let next = Counter()
                    let checked = Counter()
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten where variant.hasPrefix("8 held"):
                            let hand = self.hand
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                for _ in 0..<connections {
                                    group.addTask {
                                        try await hand.client.withConnection { connection in
                                            while true {
                                                let index = next.value.add(1, ordering: .relaxed).oldValue
                                                guard index < tasks * perTask else { return }
                                                let found = try await hand.reviews(of: book(index), on: connection)
                                                if !found.isEmpty { checked.value.add(1, ordering: .relaxed) }
                                            }
                                        }
                                    }
                                }
                                try await group.waitForAll()
                            }
                        default:
                            let hand = self.hand
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                for task in 0..<tasks {
                                    group.addTask {
                                        for call in 0..<perTask {
                                            let key = book(task * perTask + call)
                                            let found =
                                                contender == .handWritten
                                                ? try await hand.client.withConnection { try await hand.reviews(of: key, on: $0) }
                                                : try await library.fetch(
                                                    BenchReview.self, where: .equal("bookID", key), sortedBy: [.ascending("createdAt")])
                                            guard found.allSatisfy({ $0.bookID == key }) else {
                                                throw BenchError("W2c: a read got another book's reviews")
                                            }
                                            if !found.isEmpty { checked.value.add(1, ordering: .relaxed) }
                                        }
                                    }
                                }
                                try await group.waitForAll()
                            }
                        }
                    }
                    let found = checked.value.load(ordering: .relaxed)
                    guard found == tasks * perTask || reviews < books else {
                        throw BenchError("W2c \(contender.rawValue): \(found) reads found reviews")
                    }
                    return Double(tasks * perTask) / seconds
                }
                report.add(
                    "W2c \(tasks) tasks x \(perTask) point reads, against \(variant)", unit: "reads/s", rounds: throughput,
                    target: .atLeast(variant.hasSuffix("off") ? 1.0 : 1.5))
            }
        }
    }
}
