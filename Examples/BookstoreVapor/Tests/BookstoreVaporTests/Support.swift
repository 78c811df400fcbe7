@testable import BookstoreVapor
import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresTesting
import StructPostgresVapor
import VaporTesting

/// The data every test starts from: one store with two books, an author, three reviews of the first book.
struct Seed: Sendable {
    let store = StoreModel(uuid: UUID(), brand: "Corner Books")
    let author = AuthorModel(uuid: UUID(), name: "Ursula K. Le Guin")
    let dispossessed = UUID()
    let earthsea = UUID()
    let start = Date(timeIntervalSince1970: 1_750_000_000)

    var reviews: [ReviewModel] {
        (0..<3).map {
            ReviewModel(uuid: UUID(), bookID: dispossessed, content: "review \($0)", createdAt: start.addingTimeInterval(Double($0) * 60))
        }
    }

    func write(_ service: PostgresService) async throws -> [ReviewModel] {
        let reviews = self.reviews
        var store = self.store
        store.books = [
            BookModel(uuid: dispossessed, title: "The Dispossessed", price: 12.5, publisher: "Harper", author: author, reviews: reviews),
            BookModel(uuid: earthsea, title: "A Wizard of Earthsea", price: 9, author: author, reviews: []),
        ]
        try await service.update(entities: [store])
        return reviews
    }
}

/// VaporTesting's `withApp` on a fresh database: `configure(_:database:)` applies the migrations, the app boots on
/// the first request (which starts the service), the seed is written, and the app shuts down after `body`.
func withBookstore(_ body: (Application, Seed, [ReviewModel]) async throws -> Void) async throws {
    let database = try await TestDatabase.create()
    do {
        try await withApp(configure: { try await configure($0, database: database.settings) }) { app in
            try await app.asyncBoot()
            let seed = Seed()
            let reviews = try await seed.write(app.structPostgres.service)
            try await body(app, seed, reviews)
        }
    } catch {
        try? await database.drop()
        throw error
    }
    try await database.drop()
}

extension TestingHTTPResponse {
    /// The body as text.
    var text: String { body.string }

    /// The body decoded as Vapor decodes content (ISO 8601 dates).
    func decoded<T: Decodable>(_ type: T.Type) throws -> T { try content.decode(type) }
}

/// A JSON body.
func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

/// The `Content-Type: application/json` header.
let jsonHeaders: HTTPHeaders = ["Content-Type": "application/json"]
