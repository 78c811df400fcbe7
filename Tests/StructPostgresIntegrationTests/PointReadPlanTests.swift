import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// A point read sent again with another value takes what its first call worked out (``PointReadPlan``): its answers
/// and errors are those of the fetch worked out from scratch, whatever the values, shapes and layouts that follow.
@Suite struct PointReadPlanTests {
    /// What a fetch gave, comparable: the uuids found in order, or the error's description.
    static func outcome<T>(_ read: () async throws -> [T], _ uuid: (T) -> UUID) async -> String {
        do {
            return try await read().map { uuid($0).uuidString }.joined(separator: ",")
        } catch {
            return "error: \(error)"
        }
    }

    @Test func pointReadsOfRandomShapesAndValuesAnswerAsTheFetchWorkedOutFromScratch() async throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        try await withBookstoreService(configure: { _ in }) { service, _, alone in
            let (books, _) = try await CoalescedReadTests.seed(service, &random)
            // Keys of every wire type a column accepts or refuses, missing keys, NULL and NaN: each may follow a plan
            // made with another value.
            let prices: [Filter] = [
                .equal("price", 1.0), .equal("price", 2), .equal("price", Int64(3)), .equal("price", "4"), .equal("price", "cheap"),
                .equal("price", Double.nan), .equal("price", Double?.none), .equal("price", 5.5), .equal("price", 7.0),
            ]
            let titles: [Filter] = [
                .equal("title", "B1"), .equal("title", "B2"), .equal("title", "nothing"), .equal("title", 3), .equal("title", Bool?.none),
            ]
            for call in 0..<300 {
                let book = random.chance(0.15) ? UUID() : random.pick(books)
                let ascending = random.chance(0.5)
                let limit = random.chance(0.3) ? 2 : nil
                let filter: Filter
                switch Int.random(in: 0..<5, using: &random) {
                case 0: filter = .equal("uuid", book)
                case 1: filter = .equal("uuid", random.chance(0.8) ? book.uuidString : "not a uuid")
                case 2: filter = random.pick(prices)
                case 3: filter = random.pick(titles)
                default:
                    let reviews = { (db: PostgresService) in
                        try await db.fetch(
                            ReviewModel.self, where: .equal("bookID", book),
                            sortedBy: [.init("createdAt", ascending: ascending), .init("uuid")], limit: limit)
                    }
                    let found = await Self.outcome({ try await reviews(service) }, \.uuid)
                    let expected = await Self.outcome({ try await reviews(alone) }, \.uuid)
                    #expect(found == expected, "call \(call), seed \(seed)")
                    continue
                }
                let sort: [SortKey] = [.init("price", ascending: ascending), .init("uuid")]
                let books = { (db: PostgresService) -> [FlatBook] in
                    try await db.fetch(where: EntityFilter(filter), sortedBy: sort, limit: limit)
                }
                let found = await Self.outcome({ try await books(service) }, \.uuid)
                let expected = await Self.outcome({ try await books(alone) }, \.uuid)
                #expect(found == expected, "call \(call), seed \(seed)")
            }
        }
    }

    @Test func aKeptPlanIsNotTakenAfterTheLayoutIsReadAgain() async throws {
        try await TestPostgres.withDatabase { service in
            try await service.execute(unsafeSQL: BookSchema.create)
            let id = UUID()
            try await service.update(entities: [Novel(uuid: id, title: "Dune", price: 1, publisher: nil)])
            // The first fetch reads the layout; the second makes the plan; the third takes it.
            for _ in 0..<3 {
                let before: [Novel] = try await service.fetch(where: .equal("uuid", id))
                #expect(before.map(\.title) == ["Dune"])
            }
            // The column the model reads as `title` is now the table's last one.
            try await service.execute(unsafeSQL: "ALTER TABLE books RENAME COLUMN title TO headline")
            try await service.execute(unsafeSQL: "ALTER TABLE books ADD COLUMN title text")
            try await service.execute(unsafeSQL: "UPDATE books SET title = 'Dune, renamed'")
            service.forgetSchemaCache()
            for _ in 0..<3 {
                let after: [Novel] = try await service.fetch(where: .equal("uuid", id))
                #expect(after == [Novel(uuid: id, title: "Dune, renamed", price: 1, publisher: nil)])
            }
            // The key's column changes type: a plan made for a uuid key is not taken for a text one.
            try await service.execute(unsafeSQL: "ALTER TABLE books ALTER COLUMN uuid TYPE text")
            service.forgetSchemaCache()
            for _ in 0..<3 {
                let text: [Novel] = try await service.fetch(where: .equal("uuid", id.uuidString.lowercased()))
                #expect(text.map(\.uuid) == [id])
            }
        }
    }
}
