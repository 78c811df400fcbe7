import Foundation

/// Command-line options; every size is configurable, the defaults are the issue's.
struct Options {
    var books = 10_000
    var authors = 1_000
    var reviews = 30_000
    var sizes = [10_000, 100_000, 1_000_000]
    var rounds = 5
    /// Rounds of the workloads that take under three seconds per call (W1 up to 100,000 rows, W2's fetch of every
    /// book, W5, W6): one call varies by tens of percent on a shared two-core machine, so many more of them.
    var shortRounds: Int { rounds * 8 + 1 }
    /// Rounds of W1 at 1,000,000 rows or more (20 seconds per call and contender).
    var hugeBatchRounds: Int { rounds * 2 - 1 }
    var singles = 2_000
    var stores = 100
    var streamRows = 1_000_000
    /// W10's table: `average` over this many books, pages of 50 through them.
    var aggregateRows = 100_000
    /// W1 sizes above this are not run for Fluent (fetch-or-create per row takes minutes there).
    var fluentMaxRows = 10_000
    /// Hand-written W1 above this many rows sends chunks of this many rows in one transaction.
    var chunk = 100_000
    var workloads: Set<String> = ["W1", "W2", "W2C", "W3", "W4", "W4B", "W4C", "W5", "W6", "W7", "W8", "W9", "W10", "WV", "PGB"]
    var fluent = true
    var markdown = false
    /// The throwaway server keeps PostgreSQL's default durability (fsync, synchronous_commit and full_page_writes
    /// on: every commit waits for the disk), as a production server does; otherwise they are off.
    var durable = false
    /// Runs only this contender's rounds (to profile it alone); the others' figures are placeholders.
    var profiled: Contender?

    static let usage = """
        Bench [--books N] [--authors N] [--reviews N] [--sizes N,N,...] [--rounds N] [--singles N] [--stores N]
              [--stream-rows N] [--aggregate-rows N] [--fluent-max-rows N] [--chunk N] [--only W1,W2,...] [--no-fluent] [--markdown]
              [--durable]   (the throwaway server with PostgreSQL's default durability: every commit waits for the disk)
              [--quick]   (the smallest configuration: 1,000 books, 20,000 streamed rows, one round)
              [--profile hand-written|StructPostgres|Fluent]   (only that contender runs, e.g. under perf record;
                          the others' figures and every ratio are then meaningless)
        """

    init(_ arguments: [String]) throws {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            switch flag {
            case "--no-fluent": fluent = false; continue
            case "--markdown": markdown = true; continue
            case "--durable": durable = true; continue
            case "--quick":
                (books, authors, reviews, sizes, rounds, singles, stores, streamRows) = (1_000, 100, 3_000, [1_000], 1, 200, 10, 20_000)
                aggregateRows = 5_000
                continue
            case "--help": throw BenchError(Self.usage)
            default: break
            }
            guard let text = iterator.next() else { throw BenchError("\(flag) needs a value\n\(Self.usage)") }
            if flag == "--profile" {
                guard let contender = Contender(rawValue: text) else {
                    throw BenchError("--profile takes hand-written, StructPostgres or Fluent")
                }
                profiled = contender
                continue
            }
            if flag == "--only" {
                workloads = Set(text.split(separator: ",").map { $0.uppercased() })
                continue
            }
            if flag == "--sizes" {
                sizes = try text.split(separator: ",").map { part in
                    guard let size = Int(part), size > 1 else { throw BenchError("--sizes takes numbers above 1, not '\(part)'") }
                    return size
                }
                continue
            }
            guard let value = Int(text), value > 0 else { throw BenchError("\(flag) needs a positive number, not '\(text)'") }
            switch flag {
            case "--books": books = value
            case "--authors": authors = value
            case "--reviews": reviews = value
            case "--rounds": rounds = value
            case "--singles": singles = value
            case "--stores": stores = value
            case "--stream-rows": streamRows = value
            case "--aggregate-rows": aggregateRows = value
            case "--fluent-max-rows": fluentMaxRows = value
            case "--chunk": chunk = value
            default: throw BenchError("unknown option \(flag)\n\(Self.usage)")
            }
        }
    }
}
