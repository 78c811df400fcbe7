import Foundation
import PostgresNIO
import StructPostgres
import Testing

/// Reading one row (`find`, `fetchOne`), `exists` in each spelling, and a query of the caller's into models.
@Suite struct OneRowAndRawSQLTests {
    private func novels(_ service: PostgresService) async throws -> [Novel] {
        let novels = (0..<4).map { Novel(uuid: UUID(), title: "Novel \($0)", price: Double($0), publisher: $0 % 2 == 0 ? "Tor" : nil) }
        try await service.update(entities: novels)
        return novels
    }

    @Test func findAndFetchOneGiveTheRowOrNil() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let novels = try await novels(service)
            #expect(try await service.find(Novel.self, id: novels[2].uuid) == novels[2])
            #expect(try await service.find(Novel.self, id: UUID()) == nil, "a missing row is nil, not a trap")
            #expect(try await service.fetchOne(Novel.self, sortedBy: [.descending("price")]) == novels[3])
            #expect(
                try await service.fetchOne(Novel.self, where: .format("publisher == %@", "Tor"), sortedBy: [.ascending("price")])
                    == novels[0])
            #expect(try await service.fetchOne(Novel.self, where: \NovelEntity.price > 2) == novels[3])
            #expect(try await service.fetchOne(Novel.self, where: .equal("title", "none")) == nil)
            let found = try await service.transaction { try await $0.find(Novel.self, id: novels[1].uuid) }
            #expect(found == novels[1])
        }
    }

    @Test func findRefusesACompositeKeyByName() async throws {
        try await withTables(Membership.create) { service, log in
            let error = await #expect(throws: StructPostgresError.self) { _ = try await service.find(Membership.self, id: "x") }
            #expect(error?.code == .invalidValue)
            #expect(error?.message.contains("fetchOne(where:)") == true)
            #expect(log.all.isEmpty, "nothing was sent")
        }
    }

    @Test func existsTakesEverySpellingOfAFilter() async throws {
        try await withTables(BookSchema.create) { service, _ in
            #expect(try await service.exists(Novel.self) == false)
            _ = try await novels(service)
            #expect(try await service.exists(Novel.self))
            #expect(try await service.exists(Novel.self, where: .format("price > %@", 2)))
            #expect(try await service.exists(Novel.self, where: .format("price > %@", 3)) == false)
            #expect(try await service.exists(Novel.self, where: \NovelEntity.publisher == nil))
            #expect(try await service.exists(Novel.self, where: .equal("title", "Novel 9")) == false)
        }
    }

    @Test func aQueryOfYoursIsDecodedIntoModelsByColumnName() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let novels = try await novels(service)
            let minimum = 1.5
            let rows = try await service.fetch(
                Novel.self,
                sql: """
                    SELECT price, title, uuid, publisher, NULL::uuid AS author_id, 'extra' AS ignored
                    FROM books WHERE price > \(minimum) ORDER BY price DESC
                    """)
            #expect(rows == [novels[3], novels[2]])
            let inTransaction = try await service.transaction {
                try await $0.fetch(Novel.self, sql: "SELECT * FROM books ORDER BY price LIMIT 1")
            }
            #expect(inTransaction == [novels[0]])
        }
    }

    @Test func aQueryOfYoursThatDoesNotFitFailsByName() async throws {
        try await withTables(BookSchema.create) { service, _ in
            _ = try await novels(service)
            let missing = await #expect(throws: StructPostgresError.self) {
                _ = try await service.fetch(Novel.self, sql: "SELECT uuid, title FROM books")
            }
            #expect(missing?.code == .undefinedColumn)
            #expect(missing?.property == "price")
            #expect(
                missing?.message
                    == "property 'price' maps to column 'price', which the query's result does not have (its columns: uuid, title); select it too"
            )
            let parameters = await #expect(throws: StructPostgresError.self) {
                _ = try await service.fetch(
                    Novel.self, sql: PostgresQuery(unsafeSQL: "SELECT * FROM books WHERE price > $1 AND title = $2"))
            }
            #expect(parameters?.code == .invalidValue, "\(String(describing: parameters))")
            #expect(parameters?.message == "the query has 2 parameter placeholders ($1...$2) but 0 bound values")
            let quoted = try await service.query("SELECT '$9 is text', \(1)::int8 -- $5 in a comment")
            #expect(quoted.count == 1, "placeholders in quotes and comments do not count")
            #expect(try await service.count(Novel.self) == 4, "the pool goes on")
        }
    }
}
