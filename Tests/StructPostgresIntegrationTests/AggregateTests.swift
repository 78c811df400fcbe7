@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// A row of every numeric kind, for figures whose types follow their columns.
struct Quantity: StoredModel {
    static let table = "measures"
    var uuid: UUID
    var count: Int64?
    var amount: Decimal?
    var weight: Float?
    var huge: UInt64?

    static let create = "CREATE TABLE measures (uuid uuid PRIMARY KEY, count bigint, amount numeric, weight real, huge numeric(20, 0))"
}

/// The book store's per-author figures, decoded by name.
private struct AuthorShelf: Decodable, Sendable, Equatable {
    var authorID: UUID?
    var books: Int
    var averagePrice: Double?
}

/// Sums, averages, extremes and groups over the book store, each one statement, in each place an operation runs.
@Suite struct AggregateTests {
    /// Two authors' books with reviews of one to five stars, and a book without an author.
    private func shelf(_ service: PostgresService) async throws -> (books: [BookModel], reviews: [ReviewModel]) {
        var graph = makeGraph(stores: 1, booksPerStore: 6, reviewsPerBook: 3, authors: 2)
        graph[0].books![5].author = nil
        for (b, book) in graph[0].books!.enumerated() {
            for r in book.reviews!.indices { graph[0].books![b].reviews![r].stars = r == 2 ? nil : (b + r) % 5 + 1 }
        }
        try await service.update(entities: graph)
        let books = graph[0].books!
        return (books, books.flatMap { $0.reviews! })
    }

    @Test func aBooksRatingAndTheBooksPerAuthorAreOneStatementEach() async throws {
        try await withBookstore { service, log in
            let (books, reviews) = try await shelf(service)
            log.reset()
            let book = books[1]
            let stars = reviews.filter { $0.bookID == book.uuid }.compactMap(\.stars)
            let rating = try await service.average(\ReviewModel.stars, of: ReviewModel.self, where: .equal("bookID", book.uuid))
            #expect(rating == Double(stars.reduce(0, +)) / Double(stars.count))
            #expect(
                dataStatements(log) == [#"SELECT avg("reviews"."stars") AS "averageStars" FROM "reviews" WHERE "reviews"."book_id" = $1"#])
            log.reset()
            let perAuthor = try await service.groups(
                of: BookModel.self, by: \.authorID, .count, .average(\.price), sortedBy: [.descending(.count), .ascending(\.authorID)])
            #expect(dataStatements(log).count == 1)
            let expected = Dictionary(grouping: books, by: { $0.author?.uuid })
            #expect(perAuthor.count == expected.count)
            for group in perAuthor {
                let rows = try #require(expected[group.key])
                let (count, average) = group.values
                #expect(count == rows.count)
                #expect(average == rows.map { $0.price! }.reduce(0, +) / Double(rows.count))
            }
            #expect(perAuthor.map { $0.values.0 } == perAuthor.map { $0.values.0 }.sorted(by: >))
            let decoded = try await service.groups(
                of: BookModel.self, by: \.authorID, .count.named("books"), .average(\.price), having: .count > 1,
                sortedBy: [.ascending(\.authorID)], as: AuthorShelf.self)
            #expect(
                decoded.map(\.books)
                    == perAuthor.filter { $0.values.0 > 1 }.sorted { ($0.key?.uuidString ?? "~") < ($1.key?.uuidString ?? "~") }.map {
                        $0.values.0
                    })
            #expect(Set(decoded.map(\.authorID)) == Set(perAuthor.filter { $0.values.0 > 1 }.map { $0.key }))
        }
    }

    @Test func figuresOfNoRowAreNilButTheCountIsZero() async throws {
        try await withBookstore { service, _ in
            _ = try await shelf(service)
            let nobody = UUID()
            let (count, sum, average, least, most) = try await service.aggregate(
                of: ReviewModel.self, .count, .sum(\.stars), .average(\.stars), .min(\.createdAt), .max(\.content),
                where: \.bookID == nobody)
            #expect(count == 0)
            #expect(sum == nil && average == nil && least == nil && most == nil)
            #expect(try await service.sum(\BookEntity.price, of: BookModel.self, where: .constant(false)) == nil)
            #expect(try await service.groups(of: BookModel.self, by: \.authorID, .count, where: .format("FALSEPREDICATE")).isEmpty)
            // Without a grouping key, every matching row is one group, also when none matches.
            let whole = try await service.groups(of: BookModel.self, by: (), .count, .max(\.price), where: .constant(false))
            #expect(whole.count == 1 && whole[0].values.0 == 0 && whole[0].values.1 == nil)
        }
    }

    @Test func groupsBySeveralKeysAndByAToOneRelationshipsKey() async throws {
        try await withBookstore { service, _ in
            let (books, reviews) = try await shelf(service)
            let shelves = try await service.groups(of: BookModel.self, by: (\.authorID, \.publisher), .count, .min(\.title))
            let expected = Dictionary(grouping: books) { "\($0.author?.uuid.uuidString ?? "-")|\($0.publisher ?? "-")" }
            #expect(shelves.count == expected.count)
            for shelf in shelves {
                let rows = try #require(expected["\(shelf.key.0?.uuidString ?? "-")|\(shelf.key.1 ?? "-")"])
                #expect(shelf.values.0 == rows.count)
                #expect(shelf.values.1 == rows.compactMap(\.title).min())
            }
            // Reviews per book (a review's key of its book), the best rated first.
            let ratings = try await service.groups(
                of: ReviewModel.self, by: \.bookID, .average(\.stars), .count(\.stars),
                sortedBy: [.descending(.average(\.stars)), .ascending(\.bookID)], limit: 3)
            #expect(ratings.count == 3)
            for rating in ratings {
                let stars = reviews.filter { $0.bookID == rating.key }.compactMap(\.stars)
                #expect(rating.values.0 == Double(stars.reduce(0, +)) / Double(stars.count))
                #expect(rating.values.1 == stars.count)
            }
            #expect(ratings.map { $0.values.0! } == ratings.map { $0.values.0! }.sorted(by: >))
        }
    }

    @Test func sumsKeepTheirColumnsTypesAndNeverWrap() async throws {
        try await withTables(Quantity.create) { service, _ in
            let big = Int64.max - 1
            try await service.update(entities: [
                Quantity(uuid: UUID(), count: big, amount: Decimal(string: "0.10000000000000000001")!, weight: 0.1, huge: UInt64.max),
                Quantity(uuid: UUID(), count: 1, amount: Decimal(string: "1234567890.2")!, weight: 0.2, huge: UInt64.max),
                Quantity(uuid: UUID(), count: nil, amount: nil, weight: nil, huge: nil),
            ])
            #expect(try await service.sum(\Quantity.count, of: Quantity.self) == Int.max)
            #expect(try await service.sum(\Quantity.amount, of: Quantity.self) == Decimal(string: "1234567890.30000000000000000001")!)
            #expect(try await service.sum(\Quantity.weight, of: Quantity.self) == Double(Float(0.1)) + Double(Float(0.2)))
            #expect(try await service.sum(\Quantity.huge, of: Quantity.self) == Decimal(UInt64.max) * 2)
            #expect(try await service.average(\Quantity.count, of: Quantity.self) == Double(Int64.max) / 2)
            try await service.update(entities: [Quantity(uuid: UUID(), count: 2, amount: nil, weight: nil, huge: nil)])
            let error = await #expect(throws: StructPostgresError.self) { try await service.sum(\Quantity.count, of: Quantity.self) }
            #expect(error?.code == .invalidValue)
            #expect(error?.message == "sum(count) is 9223372036854775809, which Int cannot hold exactly (no figure is wrapped or rounded)")
            #expect(error?.table == "measures")
            let third = try #require(try await service.average(\Quantity.amount, of: Quantity.self, where: .isNotNull("amount")))
            let exact = Decimal(string: "617283945.150000000000000000005")!
            #expect(abs(third - exact) <= Decimal(string: "1e-20")!, "\(third)")
        }
    }

    @Test func inATransactionFiguresSeeItsOwnWrites() async throws {
        try await withBookstore { service, _ in
            let (books, _) = try await shelf(service)
            try await service.transaction { tx in
                var dearer = books[0]
                dearer.price = 1_000
                try await tx.update(entities: [dearer])
                #expect(try await tx.max(\BookEntity.price, of: BookModel.self) == 1_000)
                let (count, total) = try await tx.aggregate(of: BookModel.self, .count, .sum(\.price))
                #expect(count == books.count)
                #expect(total == 1_000 + books.dropFirst().map { $0.price! }.reduce(0, +))
            }
        }
    }

    @Test func aFigureFollowsAKeyPathsOptionality() async throws {
        try await withBookstore { service, _ in
            let (books, reviews) = try await shelf(service)
            let newest: Date? = try await service.max(\ReviewModel.createdAt, of: ReviewModel.self)
            #expect(newest == reviews.map(\.createdAt).max())
            let firstTitle: String? = try await service.min(\BookEntity.title, of: BookModel.self)
            #expect(firstTitle == books.compactMap(\.title).min())
            let (rated, all) = try await service.aggregate(of: ReviewModel.self, .count(\.stars), .count)
            #expect(rated == reviews.compactMap(\.stars).count && all == reviews.count)
        }
    }
}
