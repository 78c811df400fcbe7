import Foundation
import StructPostgres
import Testing

/// Statements are prepared once per connection, and a failed or outdated preparation never sticks.
@Suite struct PreparedStatementTests {
    private static let onePool = PoolOptions(maxConnections: 1)

    /// The library's prepared statements on the (only) pooled connection whose text contains `fragment`.
    private func prepared(_ fragment: String, _ service: PostgresService) async throws -> Int {
        let rows = try await service.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'structpg_%' AND strpos(statement, \(fragment)) > 0")
        return Int(try rows[0].decode(Int64.self))
    }

    @Test func aRepeatedUpsertOrFetchIsPreparedOnceWhateverItsNulls() async throws {
        try await withTables(BookSchema.create, pool: Self.onePool) { service, _ in
            for index in 0..<6 {
                let novel = Novel(uuid: UUID(), title: "Novel \(index)", price: 2, publisher: index % 2 == 0 ? nil : "Tor")
                try await service.update(entities: [novel])
                _ = try await service.fetch(Novel.self, where: .equal("title", "Novel \(index)"))
            }
            let inserts = try await prepared("INSERT INTO \"books\"", service)
            #expect(inserts == 1)
            let selects = try await prepared("FROM \"books\"", service)
            #expect(selects == 1)
            let stored = try await rowCount("books", service)
            #expect(stored == 6)
        }
    }

    /// The name chosen at run time reaches PostgresNIO through a task-local value (its prepared statements name
    /// themselves statically): this pins that the server sees that name and the statement's parameter types, so a
    /// driver change that sent unnamed statements instead fails here.
    @Test func theServerKnowsEachStatementUnderTheNameChosenAtRunTime() async throws {
        try await withTables(BookSchema.create, pool: Self.onePool) { service, _ in
            _ = try await service.fetch(Novel.self, where: .equal("title", "Dune"))
            try await service.update(entities: [Novel(uuid: UUID(), title: "Dune", price: 9, publisher: nil)])
            let rows = try await service.query(
                """
                SELECT name, parameter_types::text[] FROM pg_prepared_statements WHERE statement LIKE '%"books"%' ORDER BY name
                """)
            let statements = try rows.map { try $0.decode((String, [String]).self) }
            #expect(statements.count == 2, "\(statements)")
            #expect(statements.allSatisfy { $0.0.wholeMatch(of: /structpg_[0-9]+/) != nil }, "\(statements)")
            #expect(statements.contains { $0.1 == ["text"] }, "the fetch's one text parameter: \(statements)")
            #expect(statements.contains { $0.1.first == "uuid" && $0.1.count == 5 }, "the single-row upsert: \(statements)")
        }
    }

    /// A prepared statement's generic plan guesses the length of an `= ANY($1)` array; for thousands of keys
    /// it probes an index per key, so statements matching a set of keys are planned each time instead.
    @Test func statementsMatchingASetOfKeysAreNotPrepared() async throws {
        try await withTables(BookSchema.create, pool: Self.onePool) { service, _ in
            let novels = (0..<4).map { Novel(uuid: UUID(), title: "Novel \($0)", price: Double($0), publisher: nil) }
            try await service.update(entities: novels)
            for _ in 0..<6 {
                let found = try await service.fetch(Novel.self, where: .in("title", ["Novel 1", "Novel 3"]))
                #expect(found.count == 2)
                _ = try await service.fetch(Novel.self, where: .equal("title", "Novel 0"))
            }
            let sets = try await prepared("= ANY(", service)
            #expect(sets == 0)
            let single = try await prepared("FROM \"books\" WHERE", service)
            #expect(single == 1)
        }
    }

    @Test func preparedStatementsCanBeTurnedOff() async throws {
        try await withTables(BookSchema.create, pool: Self.onePool, configure: { $0.preparesStatements = false }) { service, _ in
            for index in 0..<3 {
                try await service.update(entities: [Novel(uuid: UUID(), title: "Novel \(index)", price: 2, publisher: nil)])
                _ = try await service.fetch(Novel.self, where: .equal("title", "Novel \(index)"))
            }
            let prepared = try await service.query("SELECT count(*) FROM pg_prepared_statements")
            #expect(try prepared[0].decode(Int64.self) == 0)
            let stored = try await rowCount("books", service)
            #expect(stored == 3)
            let deleted = try await service.deleteAll(Novel.self, where: .equal("title", "Novel 0"))
            #expect(deleted == 1)
            let rest = try await service.deleteAll(Novel.self, where: nil)
            #expect(rest == 2)
        }
    }

    @Test func aDeleteCountsTheRowsItRemovedEveryTime() async throws {
        try await withTables(BookSchema.create, pool: Self.onePool) { service, _ in
            let novels = (0..<6).map { Novel(uuid: UUID(), title: "Novel \($0)", price: 2, publisher: nil) }
            try await service.update(entities: novels)
            let first = try await service.delete(entities: Array(novels[0..<2]))
            let again = try await service.delete(entities: Array(novels[0..<3]))
            let byFilter = try await service.deleteAll(Novel.self, where: .equal("price", 2))
            #expect(first == 2)
            #expect(again == 1)
            #expect(byFilter == 3)
        }
    }

    @Test func aSingleRowUpsertCountsInsertedUpdatedAndSkipped() async throws {
        try await withTables(BookSchema.create) { service, _ in
            var novel = Novel(uuid: UUID(), title: "Dune", price: 9, publisher: nil)
            let inserted = try await service.update(entities: [novel])
            #expect(inserted == UpsertResult(inserted: 1))
            novel.publisher = "Chilton"
            let updated = try await service.update(entities: [novel])
            #expect(updated == UpsertResult(updated: 1))
            let skipped = try await service.update(entities: [novel], options: .insertIfAbsent)
            #expect(skipped == UpsertResult(skipped: 1))
            let stored = try await service.fetch(Novel.self)
            #expect(stored == [novel])
        }
    }

    @Test func aStatementFirstSentInAnAbortedTransactionWorksAfterwards() async throws {
        try await withTables(BookSchema.create, pool: Self.onePool) { service, _ in
            _ = try await service.fetch(Novel.self, where: .equal("price", 1.0))  // the table's layout is cached
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    try? await tx.execute(unsafeSQL: "SELECT 1/0")
                    // Its first preparation on this connection fails: the transaction is aborted.
                    _ = try await tx.fetch(Novel.self, where: .equal("title", "Dune"))
                }
            }
            #expect(error?.sqlState == "25P02")
            try await service.update(entities: [Novel(uuid: UUID(), title: "Dune", price: 9, publisher: nil)])
            let found = try await service.fetch(Novel.self, where: .equal("title", "Dune"))
            #expect(found.count == 1)
        }
    }

    @Test func aColumnWhoseTypeChangedIsReadAgainAfterForgettingTheSchema() async throws {
        struct Counter: StoredModel, Equatable {
            static let table = "counters"
            let uuid: UUID
            var hits: Int32
        }
        struct WideCounter: StoredModel, Equatable {
            static let table = "counters"
            let uuid: UUID
            var hits: Int64
        }
        try await withTables("CREATE TABLE counters (uuid uuid PRIMARY KEY, hits integer NOT NULL)", pool: Self.onePool) { service, _ in
            let id = UUID()
            try await service.update(entities: [Counter(uuid: id, hits: 1)])
            let narrow = try await service.fetch(Counter.self)
            #expect(narrow == [Counter(uuid: id, hits: 1)])
            try await service.execute(unsafeSQL: "ALTER TABLE counters ALTER COLUMN hits TYPE bigint")
            service.forgetSchemaCache()
            try await service.update(entities: [WideCounter(uuid: id, hits: 5_000_000_000)])
            let wide = try await service.fetch(WideCounter.self)
            #expect(wide == [WideCounter(uuid: id, hits: 5_000_000_000)])
        }
    }

    @Test func concurrentCallsShareTheOpenConnectionsAndGiveThemBack() async throws {
        try await withTables(BookSchema.create, pool: PoolOptions(maxConnections: 2)) { service, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask { try await service.update(entities: [Novel(uuid: UUID(), title: "\(index)", price: 1, publisher: nil)]) }
                }
                try await group.waitForAll()
            }
            let stored = try await rowCount("books", service)
            #expect(stored == 20)
            #expect(service.connectionsInUse == 0)
        }
    }
}
