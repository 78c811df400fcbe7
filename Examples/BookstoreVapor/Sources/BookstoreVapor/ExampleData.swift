import BookstoreModels
import Foundation
import StructPostgres

/// A store, two books, an author and a review with fixed uuids, for the demo and the load run (`SEED_EXAMPLE=1`).
/// Writing it again changes nothing.
enum ExampleData {
    static let book = UUID(uuidString: "00000000-0000-4000-8000-000000000101")!

    static func write(_ service: PostgresService) async throws {
        let author = AuthorModel(uuid: UUID(uuidString: "00000000-0000-4000-8000-000000000201")!, name: "Ursula K. Le Guin")
        let review = ReviewModel(
            uuid: UUID(uuidString: "00000000-0000-4000-8000-000000000301")!, bookID: book, content: "An ambiguous utopia.", stars: 5,
            createdAt: Date(timeIntervalSince1970: 1_750_000_000))
        let store = StoreModel(
            uuid: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!, brand: "Corner Books",
            books: [
                BookModel(uuid: book, title: "The Dispossessed", price: 12.5, publisher: "Harper", author: author, reviews: [review]),
                BookModel(
                    uuid: UUID(uuidString: "00000000-0000-4000-8000-000000000102")!, title: "A Wizard of Earthsea", price: 9, author: author
                ),
            ])
        try await service.update(entities: [store])
    }
}
