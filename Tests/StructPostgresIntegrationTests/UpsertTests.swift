import Foundation
import StructPostgres
import Testing

@Suite struct UpsertTests {
    private func books(_ count: Int, price: Double = 1) -> [Novel] {
        (0..<count).map { Novel(uuid: UUID(), title: "Book \($0)", price: price, publisher: "P\($0 % 7)") }
    }

    @Test func insertsNewRowsAndUpdatesExistingOnesInPlace() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let first = books(5)
            let inserted = try await service.update(entities: first)
            #expect(inserted == UpsertResult(inserted: 5))

            var changed = Array(first.prefix(2))
            changed[0].title = "Renamed"
            changed[1].price = 99
            let fresh = books(3)
            let result = try await service.update(entities: changed + fresh)
            #expect(result == UpsertResult(inserted: 3, updated: 2))
            #expect(try await rowCount("books", service) == 8)
            let stored: [Novel] = try await service.fetch(where: .equal("uuid", first[0].uuid))
            #expect(stored == [changed[0]])
            let repriced: [Novel] = try await service.fetch(where: .equal("uuid", first[1].uuid))
            #expect(repriced.first?.price == 99)
        }
    }

    /// Batches given the same rows in different orders: rows are written in key order, so they wait for each other's
    /// locks instead of deadlocking (a deadlock left, on other unique indexes, is sent again as a transaction is).
    @Test func concurrentBatchesOverTheSameRowsInDifferentOrdersAllComplete() async throws {
        try await withTables(BookSchema.create, pool: PoolOptions(maxConnections: 8)) { service, log in
            let shared = books(300)
            try await service.update(entities: shared)
            log.reset()
            let results = try await withThrowingTaskGroup(of: UpsertResult.self) { group in
                for round in 0..<8 {
                    group.addTask {
                        let batch = shared.shuffled().map {
                            var book = $0; book.title = "round \(round)"; return book
                        }
                        return try await service.update(entities: batch)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 8)
            #expect(results.allSatisfy { $0.inserted == 0 && $0.updated + $0.unchanged == 300 })
            #expect(try await rowCount("books", service) == 300)
            let deadlocks = log.all.count { $0.contains(#"INSERT INTO "books""#) } - 8
            print("8 concurrent batches of 300 shuffled rows: \(deadlocks) statements sent again")
        }
    }

    @Test func aBatchOfTenThousandIsOneStatement() async throws {
        try await withTables(BookSchema.create) { service, log in
            let batch = books(10_000)
            try await service.update(entities: Array(batch.prefix(1)))  // loads the table layout once
            log.reset()
            let result = try await service.update(entities: batch)
            #expect(result == UpsertResult(inserted: 9_999, unchanged: 1))
            #expect(log.all.count == 1)
            #expect(log.all.first?.hasPrefix("WITH upserted AS (INSERT INTO \"books\"") == true)
            #expect(log.all.first?.contains("unnest(") == true)

            log.reset()
            let again = try await service.update(
                entities: batch.map {
                    var b = $0; b.price = 2; return b
                })
            #expect(again == UpsertResult(updated: 10_000))
            #expect(log.all.count == 1)
            #expect(try await rowCount("books", service) == 10_000)
            let rows = try await service.query("SELECT count(*) FROM books WHERE price = 2")
            #expect(try rows[0].decode(Int64.self) == 10_000)
        }
    }

    @Test func duplicateKeysInOneBatchAreMergedLastWins() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "First", price: 1, publisher: nil)
            var second = book
            second.title = "Second"
            var third = book
            third.title = "Third"
            let other = books(1)[0]
            let result = try await service.update(entities: [book, other, second, third])
            #expect(result == UpsertResult(inserted: 2, merged: 2))
            let stored: [Novel] = try await service.fetch(where: .equal("uuid", book.uuid))
            #expect(stored.map(\.title) == ["Third"])
        }
    }

    @Test func anEmptyBatchSendsNothing() async throws {
        try await withTables(BookSchema.create) { service, log in
            let result = try await service.update(entities: [Novel]())
            #expect(result == UpsertResult())
            #expect(try await service.delete(entities: [Novel]()) == 0)
            #expect(log.all.isEmpty)
        }
    }

    @Test func insertIfAbsentLeavesExistingRowsUntouched() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let existing = books(3)
            try await service.update(entities: existing)
            let renamed = existing.map {
                var b = $0; b.title = "changed"; return b
            }
            let result = try await service.update(entities: renamed + books(2), options: .insertIfAbsent)
            #expect(result == UpsertResult(inserted: 2, skipped: 3))
            #expect(try await service.count(Novel.self, where: .equal("title", "changed")) == 0)
            #expect(try await rowCount("books", service) == 5)
        }
    }

    @Test func anUpdateLimitedToChosenColumnsKeepsTheOthers() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let original = books(2, price: 10)
            try await service.update(entities: original)
            let edited = original.map {
                var b = $0; b.title = "not applied"; b.price = 20; return b
            }
            let result = try await service.update(entities: edited, options: .updating("price"))
            #expect(result == UpsertResult(updated: 2))
            let stored: [Novel] = try await service.fetch(sortedBy: [.ascending("title")])
            #expect(stored.map(\.title) == original.map(\.title).sorted { ($0 ?? "") < ($1 ?? "") })
            #expect(stored.allSatisfy { $0.price == 20 })
            for batch in [edited, [edited[0]]] {
                let nothing = await #expect(throws: StructPostgresError.self) {
                    try await service.update(entities: batch, options: .updating([]))
                }
                #expect(nothing?.code == .invalidConfiguration)
                #expect(nothing?.message.contains(".insertIfAbsent") == true)
            }
        }
    }

    @Test func aCompositeUniqueKeyIsTheConflictTarget() async throws {
        try await withTables(Membership.create) { service, log in
            let members = [
                Membership(storeCode: "amazon", userName: "ann", level: 1),
                Membership(storeCode: "amazon", userName: "bob", level: 1),
                Membership(storeCode: "safari", userName: "ann", level: 1),
            ]
            #expect(try await service.update(entities: members) == UpsertResult(inserted: 3))
            log.reset()
            let promoted = Membership(storeCode: "safari", userName: "ann", level: 5)
            #expect(try await service.update(entities: [promoted]) == UpsertResult(updated: 1))
            #expect(log.all.first?.contains("ON CONFLICT (\"store_code\", \"user_name\")") == true)
            let stored = try await service.fetch(Membership.self, where: .equal("storeCode", "safari"))
            #expect(stored == [promoted])
            #expect(try await service.delete(entities: [members[0], promoted]) == 2)
            #expect(try await service.fetch(Membership.self) == [members[1]])
        }
    }

    @Test func deleteRemovesByKeyWithOneStatement() async throws {
        try await withTables(BookSchema.create) { service, log in
            let all = books(100)
            try await service.update(entities: all)
            log.reset()
            let deleted = try await service.delete(entities: Array(all.prefix(40)) + books(3))
            #expect(deleted == 40)
            #expect(log.all.count == 1)
            #expect(log.all.first?.contains("= ANY(") == true)
            #expect(try await service.count(Novel.self) == 60)
        }
    }

    @Test func aBatchLargerThanOneStatementIsWrittenInChunksInOneTransaction() async throws {
        try await withTables(BookSchema.create) { service, log in
            var all = books(25_001)
            _ = try await service.count(Novel.self)  // the table's layout is read now, not during the write
            log.reset()
            let written = try await service.update(entities: all)
            #expect(written == UpsertResult(inserted: 25_001))
            #expect(log.all.count == 5)  // BEGIN, three chunks, COMMIT
            #expect(log.all.first == "BEGIN" && log.all.last == "COMMIT")
            let stored = try await rowCount("books", service)
            #expect(stored == 25_001)
            log.reset()
            for index in all.indices { all[index].price = 2 }
            all[24_000].title = "nul\u{0}byte"  // refused after two chunks were sent
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: all) }
            #expect(error?.rowKey == "uuid=\(all[24_000].uuid.uuidString)")
            #expect(error?.message.contains("(in models 20000..<25001 of the batch; an index above counts from 20000)") == true)
            #expect(log.all.last == "ROLLBACK")
            #expect(log.all.filter { $0.hasPrefix("WITH upserted") }.count == 2)
            let changed = try await service.count(Novel.self, where: .equal("price", 2.0))
            #expect(changed == 0)
        }
    }

    @Test func aLargeBatchOfATableThatReferencesItselfIsOneStatement() async throws {
        struct Person: StoredModel {
            static let table = "people"
            let uuid: UUID
            var bossID: UUID?
        }
        try await withTables("CREATE TABLE people (uuid uuid PRIMARY KEY, boss_id uuid REFERENCES people (uuid))") { service, log in
            let ids = (0..<10_001).map { _ in UUID() }
            // Each person's boss comes later in the batch: split in two statements, the first would fail.
            let people = ids.indices.map { Person(uuid: ids[$0], bossID: $0 + 1 < ids.count ? ids[$0 + 1] : nil) }
            let written = try await service.update(entities: people)
            #expect(written.inserted == 10_001)
            #expect(log.all.filter { $0.hasPrefix("WITH upserted") }.count == 1)
        }
    }

    @Test func rowsThatWouldNotChangeAreNotRewrittenAndCountAsUnchanged() async throws {
        try await withTables(BookSchema.create) { service, log in
            let first = books(4)
            try await service.update(entities: first)
            let versions = {
                try await service.query("SELECT string_agg(xmin::text || ctid::text, ',' ORDER BY uuid) FROM books")[0].decode(String.self)
            }
            let before = try await versions()
            #expect(try await service.update(entities: first) == UpsertResult(unchanged: 4))
            #expect(try await service.update(entities: [first[0]]) == UpsertResult(unchanged: 1), "the single-row statement")
            #expect(try await versions() == before, "no new row versions")

            var changed = first
            changed[1].publisher = nil
            changed[2].price = 7
            #expect(try await service.update(entities: changed + books(1)) == UpsertResult(inserted: 1, updated: 2, unchanged: 2))
            #expect(try await service.update(entities: changed, options: .updating("title")) == UpsertResult(unchanged: 4))
            var retitled = changed[3]
            retitled.title = "New"
            retitled.price = 1_000
            #expect(try await service.update(entities: [retitled], options: .updating("title")) == UpsertResult(updated: 1))
            let stored: [Novel] = try await service.fetch(where: .equal("uuid", retitled.uuid))
            #expect(stored.first?.title == "New")
            #expect(stored.first?.price == changed[3].price, "columns not chosen are kept")
            #expect(log.all.contains { $0.contains("IS DISTINCT FROM (EXCLUDED.") })
        }
    }

    @Test func aColumnTypeWithoutEqualityIsComparedAsText() async throws {
        struct Document: StoredModel {
            static let table = "documents"
            var uuid: UUID
            var body: Address
            var spot: String
        }
        try await withTables("CREATE TABLE documents (uuid uuid PRIMARY KEY, body json NOT NULL, spot point NOT NULL)") { service, _ in
            var document = Document(uuid: UUID(), body: Address(street: "Main", city: "Oslo", tags: []), spot: "(1,2)")
            let first = try await service.update(entities: [document])
            #expect(first == UpsertResult(inserted: 1))
            let again = try await service.update(entities: [document, Document(uuid: UUID(), body: document.body, spot: "(0,0)")])
            #expect(again == UpsertResult(inserted: 1, unchanged: 1))
            document.body.city = "Bergen"
            let changed = try await service.update(entities: [document])
            #expect(changed == UpsertResult(updated: 1))
        }
    }

    @Test func aNilPartOfAUniqueKeyIsRefusedUnlessTheIndexMatchesNulls() async throws {
        struct Regional: StoredModel, Equatable {
            static let table = "regional"
            static let uniqueKey = ["code", "region"]
            var code: String
            var region: String?
            var label: String
        }
        let distinct = "CREATE TABLE regional (code text NOT NULL, region text, label text NOT NULL, UNIQUE (code, region))"
        try await withTables(distinct) { service, log in
            let batch = [Regional(code: "A", region: "north", label: "1"), Regional(code: "B", region: nil, label: "2")]
            for entities in [batch, [batch[1]]] {
                let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: entities) }
                #expect(error?.code == .invalidValue)
                #expect(error?.property == "region")
                #expect(error?.column == "region")
                #expect(error?.rowKey == "code='B', region=NULL")
                #expect(error?.message.contains("NULLS NOT DISTINCT") == true)
            }
            let stored = try await rowCount("regional", service)
            #expect(stored == 0)
            #expect(!log.all.contains { $0.contains("INSERT INTO") })
        }
        let notDistinct =
            "CREATE TABLE regional (code text NOT NULL, region text, label text NOT NULL, UNIQUE NULLS NOT DISTINCT (code, region))"
        try await withTables(notDistinct) { service, _ in
            let global = Regional(code: "B", region: nil, label: "first")
            #expect(try await service.update(entities: [global]) == UpsertResult(inserted: 1))
            var renamed = global
            renamed.label = "second"
            #expect(try await service.update(entities: [renamed]) == UpsertResult(updated: 1))
            var last = global
            last.label = "third"
            let batch = [Regional(code: "A", region: "north", label: "1"), renamed, last]
            #expect(try await service.update(entities: batch) == UpsertResult(inserted: 1, updated: 1, merged: 1))
            let stored: [Regional] = try await service.fetch(sortedBy: [.ascending("code")])
            #expect(stored == [batch[0], last])
            #expect(try await service.delete(entities: [last]) == 1)
            #expect(try await rowCount("regional", service) == 1)
        }
    }
}
