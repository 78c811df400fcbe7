@testable import Bookstore
import BookstoreModels
import Foundation
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// A row with ties in every column but its key, and NULLs in two.
struct Listing: StoredModel, Equatable {
    static let table = "items"
    var uuid: UUID
    var rank: Int32
    var bucket: Int32?
    var title: String?
    var price: Double

    static let create =
        #"CREATE TABLE items (uuid uuid PRIMARY KEY, rank integer NOT NULL, bucket integer, title text COLLATE "C", price double precision NOT NULL)"#

    static func random(_ count: Int, seed: UInt64) -> [Listing] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            Listing(
                uuid: UUID(), rank: Int32.random(in: 0..<8, using: &random),
                bucket: Bool.random(using: &random) ? nil : Int32.random(in: 0..<4, using: &random),
                title: Int.random(in: 0..<4, using: &random) == 0
                    ? nil : ["a", "b", "c", "SECRET-TITLE-42"].randomElement(using: &random)!,
                price: [0, -0.0, 1.5, 1e300, -2].randomElement(using: &random)!)
        }
    }
}

/// Pages in keyset order: every row once, in the order of one fetch with the same sort; cursors tied to their sort
/// and filter, sealed, and refused by name otherwise.
@Suite struct PageTests {
    /// Every page of a fetch, followed from the first.
    static func allPages(
        _ service: some PostgresAccess, where filter: EntityFilter<Listing>? = nil, sortedBy sort: [SortKey], pageSize: Int
    ) async throws -> (items: [Listing], pages: Int) {
        var items: [Listing] = []
        var cursor: PageCursor?
        var pages = 0
        repeat {
            let page = try await service.fetch(Listing.self, where: filter, sortedBy: sort, pageSize: pageSize, after: cursor)
            #expect(page.items.count <= pageSize)
            #expect(page.next == nil || page.items.count == pageSize)
            items += page.items
            cursor = page.next
            pages += 1
        } while cursor != nil
        return (items, pages)
    }

    @Test func pagesCoverEveryRowOnceInTheOrderOfOneFetch() async throws {
        try await withTables(Listing.create) { service, log in
            try await service.update(entities: Listing.random(150, seed: 54))
            let sorts: [[SortKey]] = [
                [], [.ascending("rank")], [.descending("rank")], [.ascending("bucket"), .descending("rank")],
                [SortKey("bucket", ascending: false, nulls: .last), SortKey("title", nulls: .first)],
                [.ascending("title"), .ascending("price")],
                [.descending("price"), .descending("uuid")],
            ]
            for filter in [nil, \Listing.rank < 5, .format("bucket == nil OR title BEGINSWITH %@", "S")] as [EntityFilter<Listing>?] {
                for sort in sorts {
                    let tieBreak = SortKey("uuid", ascending: sort.last?.ascending ?? true)
                    let whole = try await service.fetch(Listing.self, where: filter, sortedBy: sort + [tieBreak])
                    log.reset()
                    let (paged, pages) = try await Self.allPages(service, where: filter, sortedBy: sort, pageSize: 7)
                    #expect(paged.map(\.uuid) == whole.map(\.uuid), "\(sort)")
                    #expect(Set(paged.map(\.uuid)).count == paged.count)
                    #expect(pages == whole.count / 7 + 1 - (whole.count % 7 == 0 && !whole.isEmpty ? 1 : 0), "\(sort)")
                    #expect(dataStatements(log).count == pages)
                    #expect(dataStatements(log).allSatisfy { $0.hasSuffix("LIMIT 8") })
                }
            }
        }
    }

    @Test func aPageOfItsSizeOrMoreAndAnEmptyPageHaveNoNext() async throws {
        try await withTables(Listing.create) { service, log in
            let empty = try await service.fetch(Listing.self, pageSize: 5)
            #expect(empty.items.isEmpty && empty.next == nil && empty.total == nil)
            try await service.update(entities: Listing.random(5, seed: 1))
            let exact = try await service.fetch(Listing.self, sortedBy: [.ascending("rank")], pageSize: 5, includingTotal: true)
            #expect(exact.items.count == 5 && exact.next == nil && exact.total == 5)
            let first = try await service.fetch(
                Listing.self, where: \.rank >= 0, sortedBy: [.ascending("rank")], pageSize: 2, includingTotal: true)
            #expect(first.total == 5 && first.next != nil)
            log.reset()
            let second = try await service.fetch(
                Listing.self, where: \.rank >= 0, sortedBy: [.ascending("rank")], pageSize: 2, after: first.next, includingTotal: true)
            #expect(second.total == 5 && second.items.count == 2)
            #expect(dataStatements(log).count == 2)
            #expect(dataStatements(log)[1].hasPrefix(#"SELECT count(*) FROM "items" WHERE"#))
        }
    }

    @Test func aCursorHoldsNoValueInClear() async throws {
        try await withTables(Listing.create) { service, _ in
            try await service.update(
                entities: (0..<3).map { Listing(uuid: UUID(), rank: 1, bucket: nil, title: "SECRET-TITLE-\($0)", price: 1) })
            let page = try await service.fetch(Listing.self, sortedBy: [.ascending("title")], pageSize: 1)
            let cursor = try #require(page.next)
            #expect(!cursor.description.contains("SECRET"))
            let sealed = Data(try #require(cursor.bytes))
            #expect(!sealed.contains(Data("SECRET-TITLE".utf8)))
            #expect(!sealed.contains(Data(page.items[0].uuid.uuidString.utf8)))
            #expect(try PageCursor(cursor.description).map { String(describing: $0) } == cursor.description)
        }
    }

    @Test func aPageLoadsItsModelsRelationships() async throws {
        try await withBookstore { service, _ in
            try await service.update(entities: makeGraph(stores: 1, booksPerStore: 5, reviewsPerBook: 2, authors: 2))
            let page = try await service.fetch(BookModel.self, sortedBy: [.ascending("title")], pageSize: 3, loading: .only("author"))
            #expect(page.items.count == 3 && page.items.allSatisfy { $0.author != nil })
            let rest = try await service.fetch(
                BookModel.self, sortedBy: [.ascending("title")], pageSize: 3, after: page.next, loading: .none)
            #expect(rest.items.count == 2 && rest.next == nil && rest.items.allSatisfy { $0.author == nil })
            #expect((page.items + rest.items).map(\.title) == (page.items + rest.items).map(\.title).sorted { ($0 ?? "") < ($1 ?? "") })
        }
    }

    @Test func aConfiguredSecretOpensCursorsAcrossServicesAndRestarts() async throws {
        try await withTables(Listing.create) { service, _ in
            try await service.update(entities: Listing.random(10, seed: 7))
            var configuration = service.configuration
            configuration.pageCursorSecret = "a secret the instances share"
            let first = try await PostgresService.withService(configuration: configuration) {
                try await $0.fetch(Listing.self, sortedBy: [.descending("rank")], pageSize: 4)
            }
            let second = try await PostgresService.withService(configuration: configuration) {
                try await $0.fetch(Listing.self, sortedBy: [.descending("rank")], pageSize: 4, after: first.next)
            }
            let whole = try await service.fetch(Listing.self, sortedBy: [.descending("rank"), .descending("uuid")], limit: 8)
            #expect((first.items + second.items).map(\.uuid) == whole.map(\.uuid))
            #expect(!String(describing: configuration).contains("a secret the instances share"))
            var dumped = ""
            dump(configuration, to: &dumped)
            #expect(!dumped.contains("a secret the instances share"))
        }
    }
}
