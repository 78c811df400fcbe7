import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// Concurrent point reads of one shape, gathered into one statement (``ReadCoalescing``): each caller gets what its
/// own fetch would have found, and nothing of another's.
@Suite struct CoalescedReadTests {
    /// A window long enough that concurrent calls surely gather, on a loaded machine.
    static func gathering(_ configuration: inout PostgresService.Configuration) {
        configuration.readCoalescing = ReadCoalescing(window: .milliseconds(50))
    }

    /// Users, authors, 40 books (some without author) and 0 to 5 reviews each, some reviews by a user.
    static func seed(_ service: PostgresService, _ random: inout SeededRandom) async throws -> (books: [UUID], users: [UUID]) {
        let users = (0..<5).map { UserModel(uuid: UUID(), name: "U\($0)", avatarURL: nil, role: .reader, invitedByID: nil) }
        try await service.update(entities: users)
        let authors = (0..<6).map { AuthorModel(uuid: UUID(), name: "A\($0)") }
        try await service.update(entities: authors)
        var books: [FlatBook] = []
        var reviews: [ReviewModel] = []
        for index in 0..<40 {
            let book = FlatBook(
                uuid: UUID(), title: "B\(index)", price: Double(index), authorID: random.chance(0.8) ? random.pick(authors).uuid : nil)
            books.append(book)
            for n in 0..<Int.random(in: 0...5, using: &random) {
                reviews.append(
                    ReviewModel(
                        uuid: UUID(), bookID: book.uuid, content: "R\(n)",
                        createdAt: Date(timeIntervalSince1970: Double(Int.random(in: 0...5, using: &random))),
                        userID: random.chance(0.5) ? random.pick(users).uuid : nil))
            }
        }
        try await service.update(entities: books)
        try await service.update(entities: reviews)
        return (books.map(\.uuid), users.map(\.uuid))
    }

    /// Runs `read` for every key at once, then one after the other with coalescing off, and compares each answer.
    ///
    /// Calls gather only when they overlap; on a machine loaded by every other suite, the tasks of one round can run
    /// one after the other (seen once in CI: no statement of the round was a batch). A round that gathered nothing
    /// runs again, up to five times, so that the answers compared are those of a coalesced round.
    static func compare<T: Equatable & Sendable>(
        _ keys: [UUID], _ service: PostgresService, _ alone: PostgresService, _ log: StatementLog,
        _ read: @escaping @Sendable (PostgresService, UUID) async throws -> T
    ) async throws {
        var together: [Int: T] = [:]
        var gathered = false
        for _ in 0..<5 where !gathered {
            log.reset()
            together = try await withThrowingTaskGroup(of: (Int, T).self) { group in
                for (index, key) in keys.enumerated() { group.addTask { (index, try await read(service, key)) } }
                var answers: [Int: T] = [:]
                for try await (index, answer) in group { answers[index] = answer }
                return answers
            }
            gathered = log.all.contains { $0.contains("CROSS JOIN LATERAL") }
        }
        #expect(gathered, "the calls were gathered in one of five rounds: \(log.all.prefix(3))")
        for (index, key) in keys.enumerated() {
            let expected = try await read(alone, key)
            #expect(together[index] == expected, "key \(index) (\(key))")
        }
    }

    @Test func everyShapeAnswersAsTheFetchAloneDoesOverRandomMissingAndRepeatedKeys() async throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        try await withBookstoreService(configure: Self.gathering) { service, log, alone in
            let (books, users) = try await Self.seed(service, &random)
            // Missing keys, and keys asked by several callers of one batch.
            let keys = (0..<48).map { _ in random.chance(0.15) ? UUID() : random.pick(books) }
            // A book with its author and reviews (each with its user); reviews of one time come in no set order.
            try await Self.compare(keys, service, alone, log) { db, key in
                try await db.find(BookModel.self, id: key).map { book in
                    var book = book
                    book.reviews = book.reviews?.sorted { $0.uuid.uuidString < $1.uuid.uuidString }
                    return book
                }
            }
            try await Self.compare(keys, service, alone, log) { db, key in
                try await db.fetch(
                    ReviewModel.self, where: .equal("bookID", key), sortedBy: [.ascending("createdAt"), .ascending("content")], limit: 3)
            }
            try await Self.compare(keys, service, alone, log) { db, key in
                try await db.fetch(ReviewModel.self, where: \.bookID == key, sortedBy: [.descending("createdAt"), .ascending("content")])
            }
            try await Self.compare(keys, service, alone, log) { db, key in
                try await db.fetchOne(FlatBook.self, where: .equal("uuid", key), loading: .all(depth: 1)).map {
                    "\($0.uuid) \($0.author?.name ?? "-")"
                }
            }
            let userKeys = (0..<24).map { _ in random.chance(0.2) ? UUID() : random.pick(users) }
            try await Self.compare(userKeys, service, alone, log) { db, key in
                try await db.fetch(
                    ReviewModel.self, where: .equal("userID", key), sortedBy: [.ascending("createdAt"), .ascending("content")], limit: 2
                ).map(\.uuid)
            }
        }
    }

    @Test func aCoalescedReadNeverMixesCallersRows() async throws {
        try await withBookstoreService(configure: Self.gathering) { service, log, _ in
            var random = SeededRandom(seed: 7)
            let (books, _) = try await Self.seed(service, &random)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<200 {
                    let book = books[round % books.count]
                    group.addTask {
                        let reviews = try await service.fetch(
                            ReviewModel.self, where: .equal("bookID", book), sortedBy: [.ascending("createdAt")])
                        #expect(reviews.allSatisfy { $0.bookID == book }, "round \(round)")
                    }
                }
                try await group.waitForAll()
            }
            #expect(log.all.contains { $0.contains("CROSS JOIN LATERAL") })
        }
    }

    /// A caller cancelled while it waits leaves; the others get their rows. One whose connection is killed under the
    /// batch gets a named error, or its rows from the calls sent again alone; none hangs.
    @Test(.hangLimit) func aCancelledCallerAndAKilledConnectionHurtNoOtherCaller() async throws {
        try await withBookstoreService(configure: Self.gathering) { service, _, _ in
            var random = SeededRandom(seed: 11)
            let (books, _) = try await Self.seed(service, &random)
            // Hold the lane busy with a slow batch, so the next calls wait in their window.
            let blocker = Task { try await service.fetch(FlatBook.self, where: .equal("uuid", books[0])) }
            let calls = (0..<10).map { index in
                Task { try await service.fetch(ReviewModel.self, where: .equal("bookID", books[index])) }
            }
            calls[3].cancel()
            _ = try await blocker.value
            for (index, call) in calls.enumerated() {
                do {
                    let reviews = try await call.value
                    #expect(reviews.allSatisfy { $0.bookID == books[index] })
                } catch let error as StructPostgresError {
                    #expect(index == 3 && error.code == .queryCancelled, "\(index): \(error)")
                }
            }
            // Kill every connection while batches run: each call ends, with its rows or a named error.
            let killer = Task {
                for _ in 0..<5 {
                    try? await Task.sleep(for: .milliseconds(20))
                    _ = try? await service.query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<64 {
                    let book = books[index % books.count]
                    group.addTask {
                        do {
                            let reviews = try await service.fetch(ReviewModel.self, where: .equal("bookID", book))
                            #expect(reviews.allSatisfy { $0.bookID == book })
                        } catch let error as StructPostgresError {
                            #expect([.connectionLost, .queryCancelled, .poolTimeout].contains(error.code), "\(error)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            _ = await killer.value
        }
    }

    @Test func readsInATransactionAndWithCoalescingOffAreNeverGathered() async throws {
        try await withBookstoreService(configure: Self.gathering) { service, log, alone in
            var random = SeededRandom(seed: 5)
            let (books, _) = try await Self.seed(service, &random)
            log.reset()
            try await service.transaction { tx in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for book in books.prefix(8) { group.addTask { _ = try await tx.find(BookModel.self, id: book) } }
                    try await group.waitForAll()
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for book in books.prefix(16) { group.addTask { _ = try await alone.find(BookModel.self, id: book) } }
                try await group.waitForAll()
            }
            #expect(!log.all.contains { $0.contains("CROSS JOIN LATERAL") }, "\(log.all)")
        }
    }
}

/// The book store on a service with `configure` applied, and a second service on the same database with read
/// coalescing off (what each call alone answers).
func withBookstoreService<T>(
    configure: @escaping (inout PostgresService.Configuration) -> Void,
    _ body: (PostgresService, StatementLog, PostgresService) async throws -> T
) async throws -> T {
    try await withTables(pool: PoolOptions(maxConnections: 8), configure: configure) { service, log in
        _ = try await Migrator(service: service, migrations: try MigrationSet(directory: repositoryMigrations)).migrate()
        var plain = service.configuration
        plain.readCoalescing = nil
        plain.queryObserver = nil
        return try await PostgresService.withService(configuration: plain) { alone in
            log.reset()
            return try await body(service, log, alone)
        }
    }
}
