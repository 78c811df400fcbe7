import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// A title the model refuses: its entity's `toModel()` throws for it.
private struct TitledBook: Equatable, Sendable {
    let uuid: UUID
    var title: String
}

private struct TitledBookEntity: EntityProtocol {
    static let table = "books"
    var uuid: UUID
    var title: String?
    var price: Double

    struct Untitled: Error {}

    func toModel() throws -> TitledBook {
        guard let title else { throw Untitled() }
        return TitledBook(uuid: uuid, title: title)
    }
}

extension TitledBook: EntityConvertible {
    func toEntity(context: EntityContext) -> TitledBookEntity { TitledBookEntity(uuid: uuid, title: title, price: 0) }
}

/// Fetched entities become models through `toModel()`; one that throws fails the fetch with its error.
@Suite struct ModelConversionTests {
    @Test func aModelThatCannotBeMadeFailsTheFetchWithItsError() async throws {
        try await TestPostgres.withDatabase { service in
            try await service.execute(unsafeSQL: BookSchema.create)
            let books = (0..<5).map { TitledBook(uuid: UUID(), title: "T\($0)") }
            try await service.update(entities: books)
            let all: [TitledBook] = try await service.fetch(sortedBy: [.ascending("title")])
            #expect(all == books)
            // One row has no title (it sorts last): its model throws after the other four were made.
            try await service.execute(unsafeSQL: "UPDATE books SET title = NULL WHERE title = 'T3'")
            await #expect(throws: TitledBookEntity.Untitled.self) {
                let _: [TitledBook] = try await service.fetch(sortedBy: [.ascending("price"), .ascending("title")])
            }
            // The point read of a row that converts still does.
            let one: [TitledBook] = try await service.fetch(where: .equal("uuid", books[0].uuid))
            #expect(one == [books[0]])
        }
    }
}
