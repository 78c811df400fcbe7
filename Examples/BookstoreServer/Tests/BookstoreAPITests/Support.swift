@testable import BookstoreAPI
import BookstoreModels
import Foundation
import Hummingbird
import HummingbirdTesting
import StructPostgres
import StructPostgresTesting

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

/// A fresh database, the service on it and the application with its routes; migrations applied by the app at start.
func withApp(
    _ body: @Sendable (any TestClientProtocol, PostgresService, Seed, [ReviewModel]) async throws -> Void
) async throws {
    let database = try await TestDatabase.create()
    do {
        let service = try PostgresService(configuration: .init(connection: database.settings, pool: PoolOptions(maxConnections: 4)))
        let app = buildApplication(service: service, settings: ServerSettings(port: 0))
        try await app.test(.router) { client in
            let seed = Seed()
            let reviews = try await seed.write(service)
            try await body(client, service, seed, reviews)
        }
    } catch {
        try? await database.drop()
        throw error
    }
    try await database.drop()
}

func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return try decoder.decode(type, from: Data(response.body.readableBytesView))
}

func body(_ json: String) -> ByteBuffer { ByteBuffer(string: json) }

extension TestResponse {
    var text: String { String(buffer: body) }
}
