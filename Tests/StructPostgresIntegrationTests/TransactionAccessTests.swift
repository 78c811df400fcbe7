@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Testing

private struct Event: StoredModel, Equatable {
    static let table = "events"
    let uuid: UUID
    var seq: Int64
}

/// Every operation runs the same way on the service and inside a transaction (``PostgresAccess``).
@Suite struct TransactionAccessTests {
    private static let ddl = "CREATE TABLE events (uuid uuid PRIMARY KEY, seq int8 NOT NULL)"

    /// Written once, run on the pool and in a transaction.
    private func restock(_ events: [Event], in db: some PostgresAccess) async throws -> [Int64] {
        try await db.update(entities: events)
        var seen: [Int64] = []
        for try await event in db.stream(Event.self, sortedBy: [.ascending("seq")]) { seen.append(event.seq) }
        return seen
    }

    @Test func aStreamInATransactionSeesItsWritesAndEndsWithIt() async throws {
        try await withTables(Self.ddl) { service, log in
            let events = (1...300).map { Event(uuid: UUID(), seq: Int64($0)) }
            let leaked = try await service.transaction { tx -> ModelStream<Event> in
                #expect(try await restock(events, in: tx) == events.map(\.seq), "uncommitted rows of the transaction")
                var firstOfTwo: [Int64] = []
                for try await event in tx.stream(Event.self, where: .equal("seq", 7)) { firstOfTwo.append(event.seq) }
                #expect(firstOfTwo == [7], "a second cursor in the same transaction")
                return tx.stream(Event.self)
            }
            #expect(log.all.contains { $0.hasPrefix("DECLARE structpg_cursor_1 ") })
            #expect(log.all.contains { $0.hasPrefix("DECLARE structpg_cursor_2 ") })
            let error = await #expect(throws: StructPostgresError.self) { for try await _ in leaked {} }
            #expect(error?.code == .transactionMisuse)
            #expect(try await restock([], in: service) == events.map(\.seq), "committed")
        }
    }

    @Test func aStreamInATransactionThatRollsBackLeavesNothing() async throws {
        try await withTables(Self.ddl) { service, _ in
            struct Abandon: Error {}
            await #expect(throws: Abandon.self) {
                try await service.transaction { tx in
                    _ = try await restock([Event(uuid: UUID(), seq: 1)], in: tx)
                    throw Abandon()
                }
            }
            let stored = try await rowCount("events", service)
            #expect(stored == 0)
        }
    }

    @Test func anImportInATransactionThatRollsBackLeavesNothing() async throws {
        try await withBookstore { service, _ in
            struct Abandon: Error {}
            let users = Data(
                """
                [{"uuid": "\(UUID())", "name": "Ann", "role": "critic"}, {"uuid": "\(UUID())", "name": "Bo", "role": "admin"}]
                """.utf8)
            await #expect(throws: Abandon.self) {
                try await service.transaction { tx in
                    let result = try await tx.import(UserModel.self, from: users)
                    #expect(result.written.inserted == 2)
                    #expect(try await tx.count(UserModel.self) >= 2, "visible inside the transaction")
                    throw Abandon()
                }
            }
            let before = try await service.count(UserModel.self)
            let imported = try await service.transaction { try await $0.import(UserModel.self, from: users) }
            #expect(imported.written.inserted == 2)
            #expect(try await service.count(UserModel.self) == before + 2)
        }
    }
}
