import Foundation
import StructPostgres

/// W2, W6, W7: reads (and W6's graph write), each checked against what was written.
extension Bench {
    /// W2: the reviews of one book by `created_at` (point queries, contenders interleaved), and every book decoded.
    func fetches(_ report: inout Report) async throws {
        let (books, reviews) = (options.books, options.reviews)
        try await seed(books: books, reviews: reviews)
        let contenders = Contender.allCases.filter { $0 != .fluent || fluent != nil }
        var latencies: [Contender: [Double]] = [:]
        // Hand-written code holds one connection for all its point queries: no lease per call.
        try await hand.client.withConnection { connection in
            for query in -50..<options.singles {
                let index = (max(query, 0) * 7_919) % books
                let book = BenchData.uuid(2, index)
                let expected = stride(from: index, to: reviews, by: books).map { BenchData.review($0, books: books) }.sorted {
                    $0.createdAt < $1.createdAt
                }
                for contender in contenders {
                    var found: [BenchReview] = []
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten: found = try await hand.reviews(of: book, on: connection)
                        case .library:
                            found = try await service.fetch(
                                BenchReview.self, where: .equal("bookID", book), sortedBy: [.ascending("createdAt")])
                        case .fluent: found = try await fluent!.reviews(of: book)
                        }
                    }
                    guard found == expected else {
                        throw BenchError("W2 \(contender.rawValue): reviews of book \(index) differ (\(found.count) vs \(expected.count))")
                    }
                    if query >= 0 { latencies[contender, default: []].append(seconds * 1_000_000) }
                }
            }
        }
        report.addLatencies("W2 reviews of a book", latencies)

        let sample = BenchData.books(0..<books, authors: options.authors, version: 0)
        let throughput = try await rounds(options.shortRounds) { contender in
            var fetched: [BenchBook] = []
            let seconds = try await Report.seconds {
                switch contender {
                case .handWritten: fetched = try await hand.allBooks()
                case .library: fetched = try await service.fetch(BenchBook.self)
                case .fluent: fetched = try await fluent!.allBooks()
                }
            }
            let byID = Dictionary(uniqueKeysWithValues: fetched.map { ($0.uuid, $0) })
            guard fetched.count == books, sample.allSatisfy({ byID[$0.uuid] == $0 }) else {
                throw BenchError("W2 \(contender.rawValue): fetched \(fetched.count) books, not the \(books) stored")
            }
            return Double(books) / seconds
        }
        report.add(
            "W2 fetch all \(books) books", unit: "rows/s", rounds: throughput, target: .atLeast(0.85), fluentTarget: .atLeast(2))
    }

    /// W6: the stores x books x reviews x authors graph, written into empty tables (each contender in turn),
    /// then read back whole, contenders alternating on the same stored graph.
    func graph(_ report: inout Report) async throws {
        let stores = BenchData.graph(stores: options.stores, booksPerStore: 20, reviewsPerBook: 5, authors: min(200, options.authors))
        let expected = stores.sorted { $0.uuid.uuidString < $1.uuid.uuidString }
        let census = BenchData.census(stores)
        let writeTimes = try await rounds(options.shortRounds) { contender in
            try await service.execute(unsafeSQL: "TRUNCATE reviews, store_books, books, stores, authors")
            try await settle()
            let write = try await Report.seconds {
                switch contender {
                case .handWritten: try await hand.writeGraph(stores)
                case .library: try await service.update(entities: stores)
                case .fluent: try await fluent!.writeGraph(stores)
                }
            }
            let stored = [
                try await hand.count("stores"), try await hand.count("books"), try await hand.count("reviews"),
                try await hand.count("authors"),
            ]
            guard stored == census, try await hand.count("store_books") == census[1] else {
                throw BenchError("W6 \(contender.rawValue): stored \(stored), expected \(census)")
            }
            return Double(census[1]) / write
        }
        try await settle()
        // Fluent's eager loading takes seconds here: one read tells its ratio well enough (140x to 220x against
        // a target of 2x).
        let readTimes = try await rounds(options.shortRounds, fluentRounds: 1) { contender in
            var read: [GraphStore] = []
            let seconds = try await Report.seconds {
                switch contender {
                case .handWritten: read = try await hand.readGraph()
                case .library: read = try await service.fetch(GraphStore.self, loading: .all(depth: 2))
                case .fluent: read = try await fluent!.readGraph()
                }
            }
            guard read.sorted(by: { $0.uuid.uuidString < $1.uuid.uuidString }) == expected else {
                throw BenchError(
                    "W6 \(contender.rawValue): the graph read back differs from the one written (\(BenchData.census(read)) vs \(census))")
            }
            return Double(census[1]) / seconds
        }
        let label = "\(census[0]) stores x 20 books x 5 reviews"
        report.add(
            "W6 write graph (\(label))", unit: "books/s", rounds: writeTimes, target: .atLeast(0.9), fluentTarget: .atLeast(2))
        report.add(
            "W6 read graph (\(label))", unit: "books/s", rounds: readTimes, target: .atLeast(0.9), fluentTarget: .atLeast(2))
    }

    /// W7: every row of a `streamRows`-row table, one struct at a time: rows per second and peak memory.
    func streaming(_ report: inout Report) async throws {
        let rows = options.streamRows
        try await seed(books: rows)
        let expectedSum = (0..<rows).reduce(0.0) { $0 + Double($1 % 500) }
        var peaks: [Contender: Double] = [:]
        let throughput = try await rounds(1) { contender in
            Memory.resetPeak()
            var (count, sum) = (0, 0.0)
            let seconds = try await Report.seconds {
                switch contender {
                case .handWritten: (count, sum) = try await hand.streamBooks()
                case .library:
                    for try await book in service.stream(BenchBook.self) {
                        count += 1
                        sum += book.price
                    }
                case .fluent: (count, sum) = try await fluent!.streamBooks()
                }
            }
            peaks[contender] = Memory.peakMB
            guard count == rows, sum == expectedSum else {
                throw BenchError("W7 \(contender.rawValue): streamed \(count) rows (sum \(sum)), expected \(rows)")
            }
            return Double(rows) / seconds
        }
        report.add(
            "W7 stream \(rows) rows", unit: "rows/s", rounds: throughput, target: .none)
        report.add(
            "W7 stream \(rows) rows: peak RSS", unit: "MB", better: .lower,
            handWritten: peaks[.handWritten] ?? 1, library: peaks[.library] ?? 1, fluent: peaks[.fluent], target: .none)
    }
}
