import Foundation
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// A cursor passed back with another sort or filter, altered, or sealed by another service, and a page size under
/// one: each fails by name before the page's statement is sent, and the table stays as it was.
@Suite struct PageRefusalTests {
    private func refused(
        _ message: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ call: @escaping @Sendable (PostgresService, PageCursor) async throws -> Void
    ) async throws {
        try await withTables(Listing.create) { service, log in
            try await service.update(entities: Listing.random(20, seed: 3))
            let first = try await service.fetch(Listing.self, where: \.rank < 6, sortedBy: [.ascending("rank")], pageSize: 3)
            let cursor = try #require(first.next)
            let before = try await tableDigest("items", service)
            log.reset()
            let error = await #expect(throws: StructPostgresError.self, sourceLocation: sourceLocation) { try await call(service, cursor) }
            #expect(error?.code == .invalidValue, sourceLocation: sourceLocation)
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")", sourceLocation: sourceLocation)
            #expect(error?.table == "items" && error?.entity == "Listing", sourceLocation: sourceLocation)
            #expect(dataStatements(log).isEmpty, "\(dataStatements(log))", sourceLocation: sourceLocation)
            #expect(try await tableDigest("items", service) == before, sourceLocation: sourceLocation)
        }
    }

    @Test func aCursorOfAnotherSortIsRefused() async throws {
        try await refused("the page cursor was made for another sort") {
            _ = try await $0.fetch(Listing.self, where: \.rank < 6, sortedBy: [.descending("rank")], pageSize: 3, after: $1)
        }
        try await refused("the page cursor was made for another sort") {
            _ = try await $0.fetch(
                Listing.self, where: \.rank < 6, sortedBy: [.ascending("rank"), .ascending("title")], pageSize: 3, after: $1)
        }
    }

    @Test func aCursorOfAnotherFilterIsRefused() async throws {
        try await refused("the page cursor was made for another filter") {
            _ = try await $0.fetch(Listing.self, where: \.rank < 7, sortedBy: [.ascending("rank")], pageSize: 3, after: $1)
        }
        try await refused("the page cursor was made for another filter") {
            _ = try await $0.fetch(Listing.self, sortedBy: [.ascending("rank")], pageSize: 3, after: $1)
        }
    }

    @Test func anAlteredCursorOrOneOfAnotherServiceIsRefused() async throws {
        try await refused("the page cursor was not issued by this service, or was altered") { service, cursor in
            var text = Array(cursor.description)
            text[10] = text[10] == "x" ? "y" : "x"
            _ = try await service.fetch(
                Listing.self, where: \.rank < 6, sortedBy: [.ascending("rank")], pageSize: 3, after: PageCursor(String(text)))
        }
        try await refused("made anew at each start unless Configuration.pageCursorSecret is set") { service, cursor in
            try await PostgresService.withService(configuration: service.configuration) { restarted in
                _ = try await restarted.fetch(Listing.self, where: \.rank < 6, sortedBy: [.ascending("rank")], pageSize: 3, after: cursor)
            }
        }
    }

    @Test func aPageSizeUnderOneIsRefused() async throws {
        try await refused("pageSize 0 is not positive") {
            _ = try await $0.fetch(Listing.self, sortedBy: [.ascending("rank")], pageSize: 0, after: $1)
        }
    }
}
