@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Testing

private struct Titled: StoredModel {
    static let table = "books"
    let uuid: UUID
    var title: String?
    var price: Double
    var shout: String { (title ?? "").uppercased() }
}

@Suite struct TypedFilterTests {
    @Test func keyPathFiltersReturnTheRowsOfTheirFormatStringTwins() async throws {
        try await withBookstore { service, log in
            var graph = makeGraph(stores: 2, booksPerStore: 5, reviewsPerBook: 2, authors: 2)
            graph[1].books![1].title = "On Sale"
            try await service.update(entities: graph)
            let books = graph.flatMap { $0.books! }
            let ids = [books[0].uuid, books[7].uuid]
            let cases: [(EntityFilter<BookEntity>, String, [(any Encodable & Sendable)?])] = [
                (\.price < 2 && \.publisher != nil, "price < 2 AND publisher != nil", []),
                (\.title == "On Sale", "title == 'On Sale'", []),
                (\.publisher == nil || \.price >= 4, "publisher == nil OR price >= 4", []),
                (!(\.price > 1), "NOT price > 1", []),
                (.in(\.uuid, ids), "uuid IN %@", [ids]),
                (.between(\.price, 1.0, 3.0), "price BETWEEN {1, 3}", []),
                (.contains(\.title, "sale", caseInsensitive: true), "title CONTAINS[c] 'sale'", []),
                (.beginsWith(\.title, "Title 001"), "title BEGINSWITH 'Title 001'", []),
                (.endsWith(\.title, "-04") || .like(\.title, "On *"), "title ENDSWITH '-04' OR title LIKE 'On *'", []),
            ]
            for (typed, format, arguments) in cases {
                let viaKeyPaths = try await service.fetch(
                    BookModel.self, where: typed, sortedBy: [.ascending(\BookEntity.title)], loading: .none)
                let viaFormat = try await service.fetch(
                    BookModel.self, where: .format(format, arguments: arguments), sortedBy: [.ascending("title")], loading: .none)
                #expect(viaKeyPaths.map(\.uuid) == viaFormat.map(\.uuid), "\(format)")
                #expect(!viaFormat.isEmpty, "\(format) selects something")
            }
            let newest = try await service.fetch(
                ReviewModel.self, where: \.bookID == books[3].uuid, sortedBy: [.descending(\ReviewModel.createdAt)], limit: 50)
            #expect(newest.map(\.uuid) == books[3].reviews!.reversed().map(\.uuid))
            #expect(log.all.contains { $0.contains("ORDER BY \"created_at\" DESC LIMIT 50") })
            #expect(try await service.count(BookModel.self, where: \.price > 3) == 4)
            #expect(try await service.deleteAll(ReviewModel.self, where: \.bookID == books[3].uuid) == 2)
        }
    }

    @Test func aComputedPropertyIsRefusedByName() async throws {
        try await withBookstore { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.fetch(Titled.self, where: \.shout == "X")
            }
            #expect(error?.code == .undefinedColumn)
            #expect(error?.message.contains("a key path to a stored property is needed") == true)
        }
    }

    /// `\.address.city` begins where `address` does: it is refused rather than read as `address`.
    @Test func aPathIntoAPropertysOwnFieldsIsRefusedInFiltersAndSortKeys() async throws {
        struct Address: Codable, Sendable { var city: String; var street: String }
        struct Shop: StoredModel {
            static let table = "shops"
            var uuid: UUID
            var address: Address
        }
        try await withTables("CREATE TABLE shops (uuid uuid PRIMARY KEY, address jsonb NOT NULL)") { service, log in
            try await service.update(entities: [Shop(uuid: UUID(), address: Address(city: "Oslo", street: "Main"))])
            log.reset()
            let filtered = await #expect(throws: StructPostgresError.self) {
                try await service.fetch(Shop.self, where: \.address.city == "Oslo")
            }
            #expect(filtered?.code == .undefinedColumn)
            #expect(filtered?.message.contains("\\Shop.address.city") == true)
            let sorted = await #expect(throws: StructPostgresError.self) {
                try await service.fetch(Shop.self, sortedBy: [.ascending(\Shop.address.city)])
            }
            #expect(sorted?.code == .undefinedColumn)
            #expect(log.all.isEmpty, "nothing was sent")
        }
    }
}
