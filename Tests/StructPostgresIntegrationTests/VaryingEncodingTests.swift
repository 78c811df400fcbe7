import Foundation
import StructPostgres
import Testing

/// A row of `books` whose `encode(to:)` changes with `mode`: batches learn a type's columns from one row and
/// collect only values afterwards, so a row that encodes other keys must be noticed, never misread.
private struct Shifty: StoredModel, Equatable {
    enum Mode { case normal, withoutTitle, withExtraColumn, reordered, swallowingErrors }

    static let table = "books"
    var uuid: UUID
    var title: String?
    var price: Double
    var mode = Mode.normal

    enum CodingKeys: String, CodingKey { case uuid, title, price, publisher }

    init(uuid: UUID = UUID(), title: String?, price: Double, mode: Mode = .normal) {
        (self.uuid, self.title, self.price, self.mode) = (uuid, title, price, mode)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        uuid = try container.decode(UUID.self, forKey: .uuid)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        price = try container.decode(Double.self, forKey: .price)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch mode {
        case .normal:
            try container.encode(uuid, forKey: .uuid)
            try container.encode(title, forKey: .title)
            try container.encode(price, forKey: .price)
        case .withoutTitle:
            try container.encode(uuid, forKey: .uuid)
            try container.encode(price, forKey: .price)
        case .withExtraColumn:
            try container.encode(uuid, forKey: .uuid)
            try container.encode(title, forKey: .title)
            try container.encode(price, forKey: .price)
            try container.encode("extra", forKey: .publisher)
        case .reordered:
            try container.encode(uuid, forKey: .uuid)
            try container.encode(price, forKey: .price)
            try container.encode(title, forKey: .title)
        case .swallowingErrors:
            // An encode(to:) that ignores the errors its container throws.
            try? container.encode(uuid, forKey: .uuid)
            try? container.encode(title, forKey: .title)
            try? container.encode(price, forKey: .price)
        }
    }
}

@Suite struct VaryingEncodingTests {
    @Test(arguments: [Shifty.Mode.withoutTitle, .withExtraColumn, .reordered])
    fileprivate func aLaterRowWithOtherColumnsFailsTheBatchAndWritesNothing(_ mode: Shifty.Mode) async throws {
        try await withTables(BookSchema.create) { service, _ in
            let batch = [Shifty(title: "A", price: 1), Shifty(title: "B", price: 2), Shifty(title: "C", price: 3, mode: mode)]
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
            #expect(error?.code == .unsupportedType)
            #expect(error?.message.contains("entity at index 2 encodes columns") == true)
            #expect(error?.message.contains("but the first encodes [\"uuid\", \"title\", \"price\"]") == true)
            let stored = try await rowCount("books", service)
            #expect(stored == 0)
        }
    }

    /// The first row of a batch decides its columns, even when the type's usual columns are already known.
    @Test func aBatchWhoseRowsAllOmitAColumnWritesTheOthersOnly() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let books = [Shifty(title: "A", price: 1), Shifty(title: "B", price: 2)]
            try await service.update(entities: books)
            let repriced = books.map { Shifty(uuid: $0.uuid, title: nil, price: $0.price * 10, mode: .withoutTitle) }
            let result = try await service.update(entities: repriced)
            #expect(result == UpsertResult(updated: 2))
            let stored = try await service.fetch(Shifty.self, sortedBy: [.ascending("price")])
            #expect(stored.map(\.title) == ["A", "B"])
            #expect(stored.map(\.price) == [10, 20])
        }
    }

    /// A batch this large is encoded in two halves at once: the row named is the first that varies, in either half.
    @Test func aLargeBatchNamesTheFirstRowWithOtherColumnsWhicheverHalfItIsIn() async throws {
        try await withTables(BookSchema.create) { service, _ in
            var batch = (0..<6_000).map { Shifty(title: "T\($0)", price: Double($0)) }
            batch[5_000].mode = .withExtraColumn
            let late = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
            #expect(late?.message.contains("entity at index 5000 encodes columns") == true)
            batch[100].mode = .withoutTitle
            let early = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
            #expect(early?.message.contains("entity at index 100 encodes columns") == true)
            let stored = try await rowCount("books", service)
            #expect(stored == 0)
        }
    }

    @Test func aLargeBatchWhoseRowsAllOmitAColumnWritesTheOthersOnly() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let books = (0..<6_000).map { Shifty(title: "T\($0)", price: Double($0)) }
            try await service.update(entities: books)
            let repriced = books.map { Shifty(uuid: $0.uuid, title: nil, price: $0.price * 10, mode: .withoutTitle) }
            let result = try await service.update(entities: repriced)
            #expect(result == UpsertResult(updated: 5_999, unchanged: 1), "the book priced 0 keeps its price")
            let stored = try await service.fetch(Shifty.self, sortedBy: [.ascending("price")])
            #expect(stored.map(\.title) == books.map(\.title))
            #expect(stored.map(\.price) == books.map { $0.price * 10 })
        }
    }

    @Test func anEncodeThatSwallowsErrorsIsWrittenAndDeletedByItsKey() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let books = (0..<5).map { Shifty(title: "T\($0)", price: Double($0), mode: .swallowingErrors) }
            try await service.update(entities: books)
            let deleted = try await service.delete(entities: Array(books[1..<4]))
            #expect(deleted == 3)
            let left = try await service.fetch(Shifty.self, sortedBy: [.ascending("price")])
            #expect(left.map(\.title) == ["T0", "T4"])
        }
    }

    @Test func aKeyOnlyDeleteOfRowsOfDifferentShapesDeletesThemAll() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let books = [Shifty(title: "A", price: 1), Shifty(title: "B", price: 2), Shifty(title: "C", price: 3)]
            try await service.update(entities: books)
            let mixed = [
                Shifty(uuid: books[0].uuid, title: nil, price: 0, mode: .withoutTitle),
                Shifty(uuid: books[1].uuid, title: "B", price: 2, mode: .reordered),
                Shifty(uuid: books[2].uuid, title: "C", price: 3, mode: .withExtraColumn),
            ]
            let deleted = try await service.delete(entities: mixed)
            #expect(deleted == 3)
            let stored = try await rowCount("books", service)
            #expect(stored == 0)
        }
    }

    @Test func aCompositeKeyDeleteWithRepeatedKeysCountsEachRowOnce() async throws {
        try await withTables(Membership.create) { service, _ in
            let members = [
                Membership(storeCode: "S1", userName: "ann", level: 1), Membership(storeCode: "S1", userName: "bob", level: 1),
                Membership(storeCode: "S2", userName: "ann", level: 2),
            ]
            try await service.update(entities: members)
            let doomed = [members[0], members[2], members[0], Membership(storeCode: "S9", userName: "ann", level: 0)]
            let deleted = try await service.delete(entities: doomed)
            #expect(deleted == 2)
            let left = try await service.fetch(Membership.self)
            #expect(left == [members[1]])
        }
    }
}
