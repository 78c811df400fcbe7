import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A soak with faults, for memory: mixed operations of the book store from many tasks (single and batch upserts,
/// coalesced upserts, fetches with relationships, streams left early, transactions, deletes, an observer), while
/// backends are terminated every one to three seconds and one call in ten is cancelled mid-flight. Prints the
/// process's resident memory and open files every ten seconds, and compares minute 1 with the
/// last minute: exits 1 when resident memory grew by more than 10 percent.
///
///     swift build -c release --product StructPostgresSoak && .build/release/StructPostgresSoak [--minutes 5]
///
/// Uses `DATABASE_URL` when set, otherwise a throwaway cluster (`PG_BINDIR` or the PATH's PostgreSQL).
let arguments = CommandLine.arguments
let minutes = arguments.firstIndex(of: "--minutes").flatMap { Int(arguments[$0 + 1]) } ?? 5

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// Resident memory (VmRSS) in MiB, from /proc.
func residentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kB = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kB / 1024
}

/// Open file descriptors: sockets of connections that were not closed show here.
func openFiles() -> Double {
    Double((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0)
}

final class Counters: Sendable {
    let operations = Atomic(0)
    let failures = Atomic(0)
    let cancelled = Atomic(0)
    let faults = Atomic(0)
    let observed = Atomic(0)
}

let counters = Counters()
let database = try await TestDatabase.create()
let migrations = try MigrationSet(directory: URL(fileURLWithPath: "migrations"))
var configuration = PostgresService.Configuration(connection: database.settings, pool: PoolOptions(maxConnections: 12))
var coalescing = configuration
coalescing.coalescing = WriteCoalescing()

try await PostgresService.withService(configuration: configuration) { service in
    _ = try await Migrator(service: service, migrations: migrations).migrate()
    try await service.installChangeNotifications(on: ["books", "authors", "reviews", "users"])
}

/// One random operation of the book store.
func operation(_ service: PostgresService, _ coalesced: PostgresService, _ authors: [AuthorModel]) async throws {
    let author = authors.randomElement()!
    switch Int.random(in: 0..<10) {
    case 0, 1:
        try await service.update(entities: [BookModel(uuid: UUID(), title: "single", price: .random(in: 1...50), author: author)])
    case 2:
        let books = (0..<50).map { i in
            BookModel(
                uuid: UUID(), title: "batch \(i)", price: .random(in: 1...50), author: author,
                reviews: [
                    ReviewModel(uuid: UUID(), bookID: UUID(), content: "fine", createdAt: Date())
                ])
        }.map { book in
            var book = book
            book.reviews = book.reviews?.map {
                var review = $0; review.bookID = book.uuid; return review
            }
            return book
        }
        try await service.update(entities: books)
    case 3:
        try await coalesced.update(entities: [BookModel(uuid: UUID(), title: "coalesced", price: .random(in: 1...50))])
    case 4, 5:
        _ = try await service.fetch(
            BookModel.self, where: .format("price < %@", Double.random(in: 1...50)), sortedBy: [.descending("price")], limit: 20)
    case 6:
        var seen = 0
        let stop = Int.random(in: 1...2_000)
        for try await _ in service.stream(BookModel.self) {
            seen += 1
            if seen == stop { break }
        }
    case 7:
        try await service.transaction { tx in
            let some = try await tx.fetch(BookModel.self, where: .format("price > %@", 45.0), limit: 5)
            try await tx.update(
                entities: some.map {
                    var book = $0; book.price = (book.price ?? 0) + 0.01; return book
                })
        }
    case 8:
        _ = try await service.deleteAll(BookModel.self, where: .format("price > %@ AND title == %@", 49.5, "single"))
    default:
        _ = try await service.count(BookModel.self, where: .format("author.name == %@", author.name))
    }
}

try await PostgresService.withService(configuration: configuration) { service in
    try await PostgresService.withService(configuration: coalescing) { coalesced in
        try await PostgresService.withService(configuration: .init(connection: database.settings, pool: PoolOptions(maxConnections: 1))) {
            admin in
            let authors = (0..<20).map { AuthorModel(uuid: UUID(), name: "author \($0)") }
            try await service.update(entities: authors)
            let start = ContinuousClock.now
            let end = start + .seconds(60 * minutes)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        while ContinuousClock.now < end {
                            let call = Task { try await operation(service, coalesced, authors) }
                            if Int.random(in: 0..<10) == 0 {
                                try? await Task.sleep(for: .milliseconds(Int.random(in: 0...20)))
                                call.cancel()
                                counters.cancelled.add(1, ordering: .relaxed)
                            }
                            do { try await call.value } catch { counters.failures.add(1, ordering: .relaxed) }
                            counters.operations.add(1, ordering: .relaxed)
                        }
                    }
                }
                group.addTask {
                    while ContinuousClock.now < end {
                        do {
                            for try await books in service.observe(BookModel.self, where: .format("price < %@", 2.0)) {
                                _ = books.count
                                counters.observed.add(1, ordering: .relaxed)
                                if ContinuousClock.now >= end { break }
                            }
                        } catch {
                            say("observe ended: \(error)")
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                    }
                }
                group.addTask {
                    while ContinuousClock.now < end {
                        try? await Task.sleep(for: .milliseconds(Int.random(in: 1_000...3_000)))
                        _ = try? await admin.query(
                            """
                            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                            WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                              AND random() < 0.3
                            """)
                        counters.faults.add(1, ordering: .relaxed)
                    }
                }
                group.addTask {
                    var samples: [(Int, Double, Double)] = []
                    var tick = 0
                    while ContinuousClock.now < end {
                        try? await Task.sleep(for: .seconds(10))
                        tick += 10
                        let sample = (tick, residentMiB(), openFiles())
                        samples.append(sample)
                        say(
                            String(
                                format: "t=%3ds rss=%.1f MiB files=%.0f operations=%d failed=%d cancelled=%d faults=%d observed=%d",
                                sample.0, sample.1, sample.2, counters.operations.load(ordering: .relaxed),
                                counters.failures.load(ordering: .relaxed), counters.cancelled.load(ordering: .relaxed),
                                counters.faults.load(ordering: .relaxed), counters.observed.load(ordering: .relaxed)))
                    }
                    let first = samples.filter { $0.0 <= 60 }.last ?? samples.first!
                    let last = samples.last!
                    let growth = last.1 / first.1 - 1
                    say(
                        String(
                            format: "rss at minute 1: %.1f MiB, at the end (%ds): %.1f MiB, growth %.1f%% (open files %.0f -> %.0f)",
                            first.1, last.0, last.1, growth * 100, first.2, last.2))
                    if growth > 0.10 {
                        say("FAILED: resident memory grew by more than 10 percent")
                        exit(1)
                    }
                }
            }
        }
    }
}
try await database.drop()
say("ok")
