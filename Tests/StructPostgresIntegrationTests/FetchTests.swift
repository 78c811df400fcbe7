import Foundation
import StructPostgres
import Testing

@Suite struct FetchTests {
    private let books = [
        Novel(uuid: UUID(), title: "Alpha", price: 30, publisher: "Apress"),
        Novel(uuid: UUID(), title: "Beta", price: 10, publisher: nil),
        Novel(uuid: UUID(), title: "Gamma", price: 20, publisher: "Apress"),
        Novel(uuid: UUID(), title: nil, price: 5, publisher: "O'Reilly"),
    ]

    @Test func filtersByEqualityOnColumnsAndProperties() async throws {
        try await withTables(BookSchema.create) { service, _ in
            try await service.update(entities: books)
            let apress: [Novel] = try await service.fetch(where: .equal("publisher", "Apress"), sortedBy: [.ascending("title")])
            #expect(apress.map(\.title) == ["Alpha", "Gamma"])
            let byColumn = try await service.count(Novel.self, where: .equal("author_id", UUID?.none))
            #expect(byColumn == 4)
            let both: [Novel] = try await service.fetch(where: .equal("publisher", "Apress") && .equal("price", 20.0))
            #expect(both.map(\.title) == ["Gamma"])
            let either = try await service.count(Novel.self, where: .equal("title", "Beta") || .isNull("title"))
            #expect(either == 2)
        }
    }

    @Test func nilAndNotEqualFollowNSPredicate() async throws {
        try await withTables(BookSchema.create) { service, _ in
            try await service.update(entities: books)
            #expect(try await service.count(Novel.self, where: .equal("publisher", String?.none)) == 1)
            // `!=` also matches rows whose value is NULL, as NSPredicate does.
            let notApress: [Novel] = try await service.fetch(where: .notEqual("publisher", "Apress"), sortedBy: [.ascending("price")])
            #expect(notApress.map(\.price) == [5, 10])
            #expect(try await service.count(Novel.self, where: .isNotNull("title")) == 3)
            #expect(try await service.count(Novel.self, where: !.isNotNull("title")) == 1)
        }
    }

    @Test func sortsBySeveralKeysWithNullsPlacedAndLimits() async throws {
        try await withTables(BookSchema.create) { service, _ in
            try await service.update(entities: books)
            let sorted: [Novel] = try await service.fetch(
                sortedBy: [SortKey("publisher", nulls: .first), .descending("price")])
            #expect(sorted.map(\.price) == [10, 30, 20, 5])
            let titles: [Novel] = try await service.fetch(sortedBy: [SortKey("title", ascending: true, nulls: .last)], limit: 3)
            #expect(titles.map(\.title) == ["Alpha", "Beta", "Gamma"])
            let none: [Novel] = try await service.fetch(limit: 0)
            #expect(none.isEmpty)
        }
    }

    /// Unfiltered, the fetch is sent unprepared (its rows collected on the event loop); filtered, prepared.
    @Test(arguments: [false, true]) func aFetchCancelledWhileTheServerWorksFailsAsCancelled(filtered: Bool) async throws {
        try await withTables(BookSchema.create, pool: PoolOptions(maxConnections: 3)) { service, _ in
            try await service.update(entities: books)
            let (locked, lockTaken) = AsyncStream<Void>.makeStream()
            let (unlock, unlockNow) = AsyncStream<Void>.makeStream()
            let locker = Task {
                try await service.transaction { tx in
                    _ = try await tx.query("LOCK TABLE books IN ACCESS EXCLUSIVE MODE")
                    lockTaken.yield()
                    for await _ in unlock { break }
                }
            }
            for await _ in locked { break }
            let reader = Task {
                try await service.fetch(Novel.self, where: filtered ? .equal("publisher", "Apress") : nil)
            }
            func statementsWaitingForTheLock() async throws -> Int64 {
                let rows = try await service.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT%books%'"
                )
                return try rows[0].decode(Int64.self)
            }
            // Cancelled once its query waits for the lock on the server, not while it leases a connection.
            var waiting: Int64 = 0
            for _ in 0..<1000 where waiting == 0 {
                try await Task.sleep(for: .milliseconds(20))
                waiting = try await statementsWaitingForTheLock()
            }
            #expect(waiting == 1)
            // The lock is held until the call has ended: the cancellation, not the lock's release, must end it.
            // (Released after 10 s all the same, so that a cancellation that does nothing fails the test, not hangs it.)
            let cancelled = ContinuousClock.now
            reader.cancel()
            let valve = Task {
                try await Task.sleep(for: .seconds(10)); unlockNow.yield()
            }
            let outcome = await reader.result
            valve.cancel()
            #expect(cancelled.duration(to: .now) < .seconds(5), "the cancelled fetch ended only when the lock was released")
            if service.configuration.connection.poolMode == .session {
                // The server stops the statement too (behind a transaction pooler only the connection is closed).
                for _ in 0..<500 where waiting != 0 {
                    try await Task.sleep(for: .milliseconds(20))
                    waiting = try await statementsWaitingForTheLock()
                }
                #expect(waiting == 0, "the cancelled statement still waits for the lock on the server after 10 s")
            }
            unlockNow.yield()
            try await locker.value
            let error = #expect(throws: StructPostgresError.self) { try outcome.get() }
            #expect(error?.code == .queryCancelled, "\(String(describing: error))")
            let all = try await service.fetch(Novel.self)
            #expect(all.count == books.count)
        }
    }

    @Test func anUnknownKeyIsRefusedListingTheColumns() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                let _: [Novel] = try await service.fetch(where: .equal("auther", "x"))
            }
            #expect(error?.code == .undefinedColumn)
            #expect(error?.message.contains("unknown key 'auther'") == true)
            #expect(error?.message.contains("uuid, title, price, publisher, author_id") == true)
            await #expect(throws: StructPostgresError.self) {
                let _: [Novel] = try await service.fetch(sortedBy: [.ascending("nope")])
            }
        }
    }
}
