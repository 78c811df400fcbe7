@testable import Bookstore
import Foundation
import StructPostgres
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
            #expect(try await service.update(entities: [other], options: .insertIfAbsent) == UpsertResult(skipped: 1))
            #expect(try await service.fetch(Gauge.self, where: .equal("uuid", other.uuid)) == [other])
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
            let stored = try await service.fetch(Sparse.self, sortedBy: [.ascending("price")])
            #expect(stored.map(\.title) == ["Dune Messiah", nil])
            #expect(stored.map(\.price) == [3, 4])
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
            #expect(error?.message == "relationship FlatBook.author: author_id=\(missing.uuidString.lowercased()) is neither in this batch nor in table 'authors'; nothing was written")
            #expect(try await rowCount("books", service) == 1)
        }
    }
}
