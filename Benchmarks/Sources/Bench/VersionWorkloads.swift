import Foundation
import StructPostgres

/// A row of `books` with its version (`versionKey`): every write of it is conditional.
struct VersionedBenchBook: StoredModel, Equatable {
    static let table = "books"
    static let versionKey: String? = "version"
    let uuid: UUID
    var title: String
    var price: Double
    var publisher: String
    var authorID: UUID
    var version: Int

    /// `book` as read at `version` (0: not stored).
    init(_ book: BenchBook, version: Int) {
        (uuid, title, price, publisher, authorID, self.version) = (
            book.uuid, book.title, book.price, book.publisher, book.authorID, version
        )
    }

    var unversioned: BenchBook { BenchBook(uuid: uuid, title: title, price: price, publisher: publisher, authorID: authorID) }
}

/// WV: what a version costs. The library against itself: W1's batch (half new books, half stored ones with every field
/// changed) and W3's single upserts of stored books, written as a model with a version (each write conditional, the
/// result carrying each row's new version) and as one without, in the same rounds (no target).
extension Bench {
    func versionCost() async throws {
        let count = options.sizes.first ?? 10_000
        let unversioned = BenchData.books(0..<count, authors: options.authors, version: 1)
        // The stored half at version 1 (as the seed leaves them), the new half at 0.
        let versioned = unversioned.enumerated().map { VersionedBenchBook($1, version: $0 < count / 2 ? 1 : 0) }
        var rates: [Bool: [Double]] = [:]
        var ratios: [Double] = []
        for round in 0..<options.shortRounds {
            var pair: [Bool: Double] = [:]
            for withVersion in round.isMultiple(of: 2) ? [false, true] : [true, false] {
                try await seed(books: count / 2)
                let seconds = try await Report.seconds {
                    if withVersion {
                        try await service.update(entities: versioned)
                    } else {
                        try await service.update(entities: unversioned)
                    }
                }
                try await verify(unversioned, withVersion ? "StructPostgres, versioned" : "StructPostgres", total: count)
                pair[withVersion] = Double(count) / seconds
            }
            for (withVersion, rate) in pair { rates[withVersion, default: []].append(rate) }
            ratios.append(pair[true]! / pair[false]!)
        }
        say(
            "WV upsert \(count) books, with a version against without: \(Int(Report.median(rates[true]!))) against \(Int(Report.median(rates[false]!))) rows/s, ratio \(format(Report.median(ratios))) (median of \(ratios.count) rounds' ratios, \(format(ratios.min()!)) to \(format(ratios.max()!)); no target)"
        )

        let (singles, warmUp) = (options.singles, 50)
        try await seed(books: 2 * (singles + warmUp))
        var latencies: [Bool: [Double]] = [:]
        for call in 0..<(singles + warmUp) {
            for withVersion in call.isMultiple(of: 2) ? [false, true] : [true, false] {
                // A stored book of its own per call (read at version 1), every field changed: each write an update.
                let book = BenchData.book(2 * call + (withVersion ? 1 : 0), authors: options.authors, version: 3)
                let seconds = try await Report.seconds {
                    if withVersion {
                        try await service.update(entities: [VersionedBenchBook(book, version: 1)])
                    } else {
                        try await service.update(entities: [book])
                    }
                }
                if call >= warmUp { latencies[withVersion, default: []].append(seconds * 1_000_000) }
            }
        }
        let p50 = latencies.mapValues { Report.percentile($0, 0.5) }
        let p99 = latencies.mapValues { Report.percentile($0, 0.99) }
        say(
            "WV single upsert, with a version against without: p50 \(Int(p50[true]!)) against \(Int(p50[false]!)) µs (ratio \(format(p50[true]! / p50[false]!))), p99 \(Int(p99[true]!)) against \(Int(p99[false]!)) µs (ratio \(format(p99[true]! / p99[false]!))); no target"
        )
    }
}
