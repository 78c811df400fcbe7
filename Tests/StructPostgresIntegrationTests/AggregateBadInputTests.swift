@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// A number kept in a text column: a figure of it is refused by the column's type, not the property's.
private struct Scored: StoredModel {
    static let table = "scored"
    var uuid: UUID
    var score: Int
    var doubled: Int { score * 2 }

    static let create = "CREATE TABLE scored (uuid uuid PRIMARY KEY, score text NOT NULL)"
}

/// Each bad figure, group or page fails by name, before its statement is sent, and leaves the database as it was.
@Suite struct AggregateBadInputTests {
    /// Runs `call`, which must fail with `code` and a message containing `message`; nothing but catalog reads may be
    /// sent, and `books` and `scored` stay as they were.
    private func refused(
        _ code: StructPostgresError.Code, _ message: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ call: @escaping @Sendable (PostgresService) async throws -> Void
    ) async throws {
        try await withBookstore { service, log in
            try await service.execute(unsafeSQL: Scored.create + "; INSERT INTO scored VALUES ('\(UUID())', '7')")
            try await service.update(entities: makeGraph(stores: 1, booksPerStore: 3, reviewsPerBook: 1, authors: 1))
            let before = [try await tableDigest("books", service), try await tableDigest("scored", service)]
            log.reset()
            let error = await #expect(throws: StructPostgresError.self, sourceLocation: sourceLocation) { try await call(service) }
            #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")", sourceLocation: sourceLocation)
            #expect(error?.table != nil, sourceLocation: sourceLocation)
            #expect(dataStatements(log).isEmpty, "\(dataStatements(log))", sourceLocation: sourceLocation)
            #expect(
                [try await tableDigest("books", service), try await tableDigest("scored", service)] == before,
                sourceLocation: sourceLocation)
        }
    }

    @Test func aComputedKeyPathIsRefusedByName() async throws {
        try await refused(.undefinedColumn, "sum: the key path reads a computed property of Scored (of type Int)") {
            _ = try await $0.sum(\Scored.doubled, of: Scored.self)
        }
        try await refused(.undefinedColumn, "group by: the key path reads a computed property of Scored") {
            _ = try await $0.groups(of: Scored.self, by: \.doubled, .count)
        }
    }

    @Test func aRelatedSlotIsRefusedByName() async throws {
        try await refused(.undefinedColumn, "BookEntity.author, a @Related relationship slot") {
            _ = try await $0.groups(of: BookModel.self, by: \.author, .count)
        }
        try await refused(.undefinedColumn, "count: the key path reads BookEntity.reviews, a @Related relationship slot") {
            _ = try await $0.aggregate(of: BookModel.self, .count, .count(\.reviews))
        }
    }

    @Test func aSumOrAverageOfAColumnThatIsNotANumberIsRefusedByName() async throws {
        try await refused(.invalidValue, "sum(score): column 'score' is text, not a number") {
            _ = try await $0.sum(\Scored.score, of: Scored.self)
        }
        try await refused(.invalidValue, "average(score): column 'score' is text, not a number") {
            _ = try await $0.groups(of: Scored.self, by: \.uuid, .average(\.score))
        }
        try await refused(.invalidValue, "min(uuid): column 'uuid' is uuid, which has no order min can use") {
            _ = try await $0.min(\BookEntity.uuid, of: BookModel.self)
        }
    }

    @Test func aGroupFilterWithoutAGroupingIsRefusedByName() async throws {
        try await refused(.invalidValue, "having: a group filter needs a grouping") {
            _ = try await $0.groups(of: BookModel.self, by: (), .count, having: .count > 1)
        }
    }

    @Test func aSortByAKeyNotGroupedANegativeLimitAndTwoResultsOfOneNameAreRefused() async throws {
        try await refused(.invalidValue, "sortedBy: 'title' is not a key the query groups by (it groups by authorID)") {
            _ = try await $0.groups(of: BookModel.self, by: \.authorID, .count, sortedBy: [.ascending(\.title)])
        }
        try await refused(.invalidValue, "limit -1 is negative") {
            _ = try await $0.groups(of: BookModel.self, by: \.authorID, .count, limit: -1)
        }
        struct Twice: Decodable, Sendable { var count: Int }
        try await refused(.invalidValue, "two results of the grouped query are named 'count'") {
            _ = try await $0.groups(of: BookModel.self, by: \.authorID, .count, .count(\.title).named("count"), as: Twice.self)
        }
        try await refused(.invalidValue, "malformed predicate") {
            _ = try await $0.average(\BookEntity.price, of: BookModel.self, where: .format("price >>> 2"))
        }
    }
}
