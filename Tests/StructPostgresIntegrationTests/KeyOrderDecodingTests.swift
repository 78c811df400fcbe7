import Foundation
import StructPostgres
import Testing

/// A row of `books` whose `init(from:)` asks for `title` and `publisher` in an order that depends on the price:
/// a fetch learns the order of keys from its first result and gives it to later ones, so a row that asks
/// otherwise must still find each key's own column.
private struct Flip: StoredModel, Equatable {
    static let table = "books"
    var uuid: UUID
    var title: String
    var price: Double
    var publisher: String

    enum CodingKeys: String, CodingKey { case uuid, title, price, publisher }

    init(uuid: UUID = UUID(), title: String, price: Double, publisher: String) {
        (self.uuid, self.title, self.price, self.publisher) = (uuid, title, price, publisher)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        price = try container.decode(Double.self, forKey: .price)
        if price > 10 {
            publisher = try container.decode(String.self, forKey: .publisher)
            title = try container.decode(String.self, forKey: .title)
        } else {
            title = try container.decode(String.self, forKey: .title)
            publisher = try container.decode(String.self, forKey: .publisher)
        }
        uuid = try container.decode(UUID.self, forKey: .uuid)
    }
}

@Suite struct KeyOrderDecodingTests {
    @Test func rowsThatAskForTheirKeysInAnotherOrderAreDecodedFromTheirOwnColumns() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let cheap = Flip(title: "Cheap", price: 5, publisher: "P1")
            let dear = Flip(title: "Dear", price: 20, publisher: "P2")
            try await service.update(entities: [cheap, dear])
            for _ in 0..<2 {
                #expect(try await service.fetch(Flip.self, sortedBy: [.ascending("price")]) == [cheap, dear])
                #expect(try await service.fetch(Flip.self, sortedBy: [.descending("price")]) == [dear, cheap])
                #expect(try await service.fetch(Flip.self, where: .format("price > %@", 10.0)) == [dear])
            }
        }
    }

    @Test func afterTheSchemaChangesKeysAreReadFromTheirNewColumns() async throws {
        let create = """
            CREATE TABLE books (uuid uuid PRIMARY KEY, notes text, title text, price double precision NOT NULL DEFAULT 0,
                                publisher text, author_id uuid)
            """
        try await withTables(create) { service, _ in
            let novel = Novel(uuid: UUID(), title: "Dune", price: 9, publisher: "Chilton")
            try await service.update(entities: [novel])
            #expect(try await service.fetch(Novel.self) == [novel])
            #expect(try await service.fetch(Novel.self) == [novel])
            try await service.execute(unsafeSQL: "ALTER TABLE books DROP COLUMN notes")
            service.forgetSchemaCache()
            #expect(try await service.fetch(Novel.self) == [novel])
            try await service.execute(
                unsafeSQL:
                    "ALTER TABLE books ADD COLUMN notes text; ALTER TABLE books DROP COLUMN title; ALTER TABLE books ADD COLUMN title text")
            try await service.execute(unsafeSQL: "UPDATE books SET title = 'Dune Messiah'")
            service.forgetSchemaCache()
            #expect(try await service.fetch(Novel.self).map(\.title) == ["Dune Messiah"])
        }
    }
}
