import Foundation
import PostgresNIO
import StructPostgres

/// `--only P`: the point calls of W2 and W3 alone, many times, for a profiler (with `--profile`, one contender runs).
/// Hand-written code holds one connection; prints each contender's p50 and client CPU per call. Not in the default
/// run: W2 and W3 measure the same calls, interleaved.
extension Bench {
    func pointCalls() async throws {
        let (books, reviews, calls) = (options.books, options.reviews, options.singles * 5)
        try await seed(books: books, reviews: reviews)
        let contenders: [Contender] = [.handWritten, .library].filter { options.profiled == nil || options.profiled == $0 }
        var latencies: [Contender: [Double]] = [:]
        var cpu: [Contender: Double] = [:]
        var upserts: [Contender: [Double]] = [:]
        var upsertCPU: [Contender: Double] = [:]
        // BENCH_P_PHASE=fetch or upsert runs that phase alone (for a profiler or strace attached meanwhile).
        let phase = ProcessInfo.processInfo.environment["BENCH_P_PHASE"]
        try await hand.client.withConnection { connection in
            for contender in contenders {
                let start = CPUTime.now(server: false)
                for call in -50..<(phase == "upsert" ? -50 : calls) {
                    let book = BenchData.uuid(2, (max(call, 0) * 7_919) % books)
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten: _ = try await hand.reviews(of: book, on: connection)
                        default:
                            _ = try await service.fetch(
                                BenchReview.self, where: .equal("bookID", book), sortedBy: [.ascending("createdAt")])
                        }
                    }
                    if call >= 0 { latencies[contender, default: []].append(seconds * 1_000_000) }
                }
                cpu[contender] = (CPUTime.now(server: false) - start).client / Double(calls + 50) * 1_000_000
                let upsertStart = CPUTime.now(server: false)
                for call in -50..<(phase == "fetch" ? -50 : calls) {
                    // A version of each call's own: every upsert changes its row (an unchanged row is not rewritten).
                    let book = BenchData.book(
                        max(call, 0) % books, authors: options.authors, version: call + (contender == .handWritten ? 100_000 : 200_000))
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten: _ = try await hand.upsertOneReportingOutcome(book, on: connection)
                        default: try await service.update(entities: [book])
                        }
                    }
                    if call >= 0 { upserts[contender, default: []].append(seconds * 1_000_000) }
                }
                upsertCPU[contender] = (CPUTime.now(server: false) - upsertStart).client / Double(calls + 50) * 1_000_000
            }
        }
        guard phase == nil else { return }
        try await callCosts(contenders, books: books)
        for contender in contenders {
            let (queries, writes) = (latencies[contender]!.sorted(), upserts[contender]!.sorted())
            say(
                "P point query \(contender.rawValue): p50 \(Int(queries[queries.count / 2])) µs, client CPU \(Int(cpu[contender]!)) µs per call"
            )
            say(
                "P single upsert \(contender.rawValue): p50 \(Int(writes[writes.count / 2])) µs, client CPU \(Int(upsertCPU[contender]!)) µs per call"
            )
        }
    }

    /// The thread sleeps and allocations of one point query and one single upsert, per contender (see ``CallCost``):
    /// hand-written code on a held connection and leasing one per call, the library with its defaults.
    func callCosts(_ contenders: [Contender], books: Int) async throws {
        let count = 2_000
        func book(_ call: Int) -> UUID { BenchData.uuid(2, (call * 7_919) % books) }
        var version = 300_000
        func nextBook(_ call: Int) -> BenchBook {
            version += 1
            return BenchData.book(call % books, authors: options.authors, version: version)
        }
        try await hand.client.withConnection { connection in
            for contender in contenders {
                var call = 0
                let fetch = try await CallCost.measure(count) {
                    call += 1
                    switch contender {
                    case .handWritten: _ = try await hand.reviews(of: book(call), on: connection)
                    default:
                        _ = try await service.fetch(
                            BenchReview.self, where: .equal("bookID", book(call)), sortedBy: [.ascending("createdAt")])
                    }
                }
                let upsert = try await CallCost.measure(count) {
                    call += 1
                    switch contender {
                    case .handWritten: _ = try await hand.upsertOneReportingOutcome(nextBook(call), on: connection)
                    default: try await service.update(entities: [nextBook(call)])
                    }
                }
                say("P costs, point query, \(contender == .handWritten ? "hand-written (held connection)" : contender.rawValue): \(fetch)")
                say(
                    "P costs, single upsert, \(contender == .handWritten ? "hand-written (held connection)" : contender.rawValue): \(upsert)"
                )
            }
        }
        guard contenders.contains(.handWritten) else { return }
        var call = 0
        let leased = try await CallCost.measure(count) {
            call += 1
            _ = try await hand.client.withConnection { try await hand.reviews(of: book(call), on: $0) }
        }
        say("P costs, point query, hand-written (a lease per call): \(leased)")
    }
}
