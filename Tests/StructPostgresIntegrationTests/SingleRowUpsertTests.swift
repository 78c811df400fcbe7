@testable import Bookstore
import BookstoreModels
import Foundation
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

private struct Gauge: StoredModel, Equatable {
    static let table = "gauges"
    static let create = """
        CREATE TABLE gauges (uuid uuid PRIMARY KEY, small integer NOT NULL, amount numeric(6,2) NOT NULL,
                             ratio real NOT NULL, code varchar(4) NOT NULL, note text)
        """
    var uuid: UUID
    var small = 1
    var amount: Decimal = 1
    var ratio = 1.0
    var code = "ok"
    var note: String?
}

/// A row of `books` that leaves its title out when it has none, so that its columns change from row to row.
private struct Sparse: StoredModel, Equatable {
    static let table = "books"
    var uuid: UUID
    var title: String?
    var price: Double

    enum CodingKeys: String, CodingKey { case uuid, title, price }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
        if let title { try container.encode(title, forKey: .title) }
        try container.encode(price, forKey: .price)
    }
}

/// After the first single-row upsert of a type, the next ones only encode, check and bind their values along a
/// plan made once. A row that does not fit the plan, or a bad value, must be written, or refused, as the first
/// row of its type would be.
@Suite struct SingleRowUpsertTests {
    @Test(arguments: [
        (Gauge(uuid: UUID(), small: 3_000_000_000), "small", "22003"),
        (Gauge(uuid: UUID(), amount: Decimal(string: "12345.67")!), "amount", "22003"),
        (Gauge(uuid: UUID(), ratio: 1e300), "ratio", "22003"),
        (Gauge(uuid: UUID(), code: "toolong"), "code", "22001"),
        (Gauge(uuid: UUID(), note: "nul\u{0}byte"), "note", "22021"),
    ])
    fileprivate func aBadValueAfterThePlanIsRefusedAsTheFirstRowWouldBeAndChangesNothing(
        _ bad: Gauge, column: String, sqlState: String
    ) async throws {
        try await withTables(Gauge.create) { service, log in
            let stored = Gauge(uuid: bad.uuid, note: "first")
            try await service.update(entities: [stored])
            try await service.update(entities: [Gauge(uuid: UUID())])
            log.reset()
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [bad]) }
            #expect(error?.code == .invalidValue)
            #expect(error?.sqlState == sqlState)
            #expect(error?.entity == "Gauge")
            #expect(error?.column == column)
            #expect(error?.property == column)
            #expect(error?.rowKey == "uuid=\(bad.uuid.uuidString)")
            #expect(error?.message.hasPrefix("Gauge.\(column): ") == true)
            #expect(!log.all.contains { $0.hasPrefix("INSERT") })
            #expect(try await service.fetch(Gauge.self, where: .equal("uuid", bad.uuid)) == [stored])
            #expect(try await rowCount("gauges", service) == 2)
        }
    }

    @Test func aRowThatFitsThePlanTakesItAndOneThatDoesNotGoesTheGeneralWay() async throws {
        try await withTables(Gauge.create) { service, _ in
            try await service.update(entities: [Gauge(uuid: UUID(), note: "first")])
            let plan = try #require(
                service.runtime.upserts.singleRowPlan(.init(entity: ObjectIdentifier(Gauge.self), conflict: .updateAll)))
            #expect(plan.prepare(Gauge(uuid: UUID(), small: 7, note: "fits"), options: .upsert) != nil)
            #expect(plan.prepare(Gauge(uuid: UUID(), note: nil), options: .upsert) != nil, "a null is bound with the column's type")
            #expect(plan.prepare(Gauge(uuid: UUID(), code: "toolong"), options: .upsert) == nil)
            #expect(plan.prepare(Sparse(uuid: UUID(), title: "other columns", price: 1), options: .upsert) == nil)
            #expect(service.runtime.upserts.singleRowPlan(.init(entity: ObjectIdentifier(Gauge.self), conflict: .ignore)) == nil)
            service.forgetSchemaCache()
            #expect(service.runtime.upserts.singleRowPlan(.init(entity: ObjectIdentifier(Gauge.self), conflict: .updateAll)) == nil)
        }
    }

    @Test func aPlanMadeBeforeTheSchemaChangedIsForgottenWithIt() async throws {
        try await withTables(Gauge.create) { service, log in
            try await service.update(entities: [Gauge(uuid: UUID(), code: "abc")])
            try await service.update(entities: [Gauge(uuid: UUID(), code: "def")])
            try await service.execute(unsafeSQL: "DELETE FROM gauges; ALTER TABLE gauges ALTER COLUMN code TYPE varchar(2)")
            service.forgetSchemaCache()
            log.reset()
            let bad = Gauge(uuid: UUID(), code: "abc")
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [bad]) }
            #expect(error?.code == .invalidValue)
            #expect(error?.sqlState == "22001")
            #expect(error?.rowKey == "uuid=\(bad.uuid.uuidString)")
            #expect(!log.all.contains { $0.hasPrefix("INSERT") })
            try await service.update(entities: [Gauge(uuid: UUID(), code: "ab")])
            #expect(try await rowCount("gauges", service) == 1)
        }
    }

    @Test func nullsAndValuesTakeTurnsInAColumnAndEveryRowIsWrittenAndCounted() async throws {
        try await withTables(Gauge.create) { service, _ in
            var gauge = Gauge(uuid: UUID())
            for (index, note) in [nil, "a", nil, "b", "c", nil].enumerated() {
                gauge.note = note
                gauge.small = index
                let result = try await service.update(entities: [gauge])
                #expect(result == (index == 0 ? UpsertResult(inserted: 1) : UpsertResult(updated: 1)))
                #expect(try await service.fetch(Gauge.self) == [gauge])
            }
            let other = Gauge(uuid: UUID(), note: "other")
            #expect(try await service.update(entities: [other]) == UpsertResult(inserted: 1))
            for _ in 0..<2 {
                var ignored = other
                ignored.small = 99
                #expect(try await service.update(entities: [ignored], options: .insertIfAbsent) == UpsertResult(skipped: 1))
            }
            #expect(try await service.update(entities: [Gauge(uuid: UUID())], options: .insertIfAbsent) == UpsertResult(inserted: 1))
            #expect(try await service.fetch(Gauge.self, where: .equal("uuid", other.uuid)) == [other])
            for code in ["x", "y"] {
                var chosen = other
                (chosen.small, chosen.code) = (50, code)
                #expect(
                    try await service.update(entities: [chosen], options: .updating("small"))
                        == (code == "x" ? UpsertResult(updated: 1) : UpsertResult(unchanged: 1)))
            }
            var expected = other
            expected.small = 50
            #expect(
                try await service.fetch(Gauge.self, where: .equal("uuid", other.uuid)) == [expected], "only the chosen column is updated")
        }
    }

    @Test func rowsOfChangingColumnsEachWriteTheirOwnColumns() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let id = UUID()
            try await service.update(entities: [Sparse(uuid: id, title: "Dune", price: 1)])
            let untitled = try await service.update(entities: [Sparse(uuid: id, title: nil, price: 2)])
            #expect(untitled == UpsertResult(updated: 1))
            // The title was left out, so it is kept.
            #expect(try await service.fetch(Sparse.self) == [Sparse(uuid: id, title: "Dune", price: 2)])
            try await service.update(entities: [Sparse(uuid: id, title: "Dune Messiah", price: 3)])
            try await service.update(entities: [Sparse(uuid: UUID(), title: nil, price: 4)])
            try await service.update(entities: [Sparse(uuid: UUID(), title: nil, price: 5)])
            try await service.update(entities: [Sparse(uuid: UUID(), title: "Children of Dune", price: 6)])
            try await service.update(entities: [Sparse(uuid: UUID(), title: "God Emperor", price: 7)])
            let stored = try await service.fetch(Sparse.self, sortedBy: [.ascending("price")])
            #expect(stored.map(\.title) == ["Dune Messiah", nil, nil, "Children of Dune", "God Emperor"])
            #expect(stored.map(\.price) == [3, 4, 5, 6, 7])
        }
    }

    @Test func aMissingReferenceAfterThePlanNamesTheRelationshipAndWritesNothing() async throws {
        try await withBookstore { service, _ in
            let author = AuthorModel(uuid: UUID(), name: "Stored")
            try await service.update(entities: [author])
            try await service.update(entities: [FlatBook(uuid: UUID(), title: "Fine", price: 1, authorID: author.uuid)])
            let missing = UUID()
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [FlatBook(uuid: UUID(), title: "Dangling", price: 2, authorID: missing)])
            }
            #expect(error?.code == .foreignKeyViolation)
            #expect(error?.relationship == "FlatBook.author")
            #expect(error?.property == "authorID")
            #expect(
                error?.message
                    == "relationship FlatBook.author: author_id=\(missing.uuidString.lowercased()) is neither in this batch nor in table 'authors'; nothing was written"
            )
            #expect(try await rowCount("books", service) == 1)
        }
    }
}
