import Foundation
import StructPostgres

/// The book store as a ported StructCoreData app models it: models with relationships, entities with slots.
/// Tables come from the repository's `migrations/` (see ``withBookstore(_:)``).
struct GraphStore: Sendable, Equatable {
    let uuid: UUID
    var brand: String
    var books: [GraphBook]?
}

struct GraphStoreEntity: EntityProtocol {
    static let table = "stores"
    static let relationships: [Relationship<Self>] = [
        .toMany("books", \.$books, through: "store_books", orderedBy: [.ascending("title")]),
    ]
    var uuid: UUID
    var brand: String
    @Related var books: [GraphBookEntity]

    func toModel() -> GraphStore {
        GraphStore(uuid: uuid, brand: brand, books: $books.loaded?.map { $0.toModel() })
    }
}

extension GraphStore: EntityConvertible {
    func toEntity(context: EntityContext) throws -> GraphStoreEntity {
        var store = GraphStoreEntity(uuid: uuid, brand: brand)
        if let books { store.books = try books.map { try context.insert($0) } }
        return store
    }
}

struct GraphBook: Sendable, Equatable {
    let uuid: UUID
    var title: String?
    var price: Double
    var publisher: String?
    var author: GraphAuthor?
    var reviews: [GraphReview]?
}

struct GraphBookEntity: EntityProtocol {
    static let table = "books"
    static let relationships: [Relationship<Self>] = [
        .toOne("author", \.$author),
        .toMany("reviews", \.$reviews, orderedBy: [.ascending("createdAt")]),
    ]
    var uuid: UUID
    var title: String?
    var price: Double
    var publisher: String?
    var authorID: UUID?
    @Related var author: GraphAuthor?
    @Related var reviews: [GraphReview]

    func toModel() -> GraphBook {
        GraphBook(uuid: uuid, title: title, price: price, publisher: publisher, author: author, reviews: $reviews.loaded)
    }
}

extension GraphBook: EntityConvertible {
    func toEntity(context: EntityContext) throws -> GraphBookEntity {
        for review in reviews ?? [] { try context.insert(review) }
        return GraphBookEntity(
            uuid: uuid, title: title, price: price, publisher: publisher,
            authorID: try author.map { try context.insert($0).uuid })
    }
}

struct GraphAuthor: StoredModel, Equatable {
    static let table = "authors"
    let uuid: UUID
    var name: String
}

/// A review holds its book's uuid (a back reference) and its user's.
struct GraphReview: StoredModel, Equatable {
    static let table = "reviews"
    static let relationships: [Relationship<Self>] = [.toOne("user", \.$user)]
    let uuid: UUID
    var bookID: UUID
    var content: String?
    var createdAt: Date
    var userID: UUID?
    @Related var user: GraphUser?

    static func == (lhs: Self, rhs: Self) -> Bool {
        (lhs.uuid, lhs.bookID, lhs.content, lhs.createdAt, lhs.userID) == (rhs.uuid, rhs.bookID, rhs.content, rhs.createdAt, rhs.userID)
    }
}

/// A user may have been invited by another user: a self-reference.
struct GraphUser: StoredModel {
    static let table = "users"
    static let relationships: [Relationship<Self>] = [.toOne("invitedBy", \.$invitedBy)]
    let uuid: UUID
    var name: String
    var role = "reader"
    var invitedByID: UUID?
    @Related var invitedBy: GraphUser?
}

/// A book written as a flat row, its author given by key only.
struct FlatBook: StoredModel {
    static let table = "books"
    static let relationships: [Relationship<Self>] = [.toOne("author", \.$author)]
    let uuid: UUID
    var title: String?
    var price: Double
    var authorID: UUID?
    @Related var author: GraphAuthor?
}

/// The repository's `migrations/`, which the example app applies too.
let repositoryMigrations = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("../../../migrations").standardized

/// A fresh database with the book-store migrations applied, and a log of the statements sent after that.
func withBookstore<T>(
    pool: PoolOptions = PoolOptions(maxConnections: 4), _ body: (PostgresService, StatementLog) async throws -> T
) async throws -> T {
    try await withTables(pool: pool) { service, log in
        _ = try await Migrator(service: service, migrations: try MigrationSet(directory: repositoryMigrations)).migrate()
        log.reset()
        return try await body(service, log)
    }
}

/// A digest of every row of `table`, to show a table did not change.
func tableDigest(_ table: String, _ service: PostgresService) async throws -> String {
    let rows = try await service.query(
        "SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM \(unescaped: table) t")
    return try rows[0].decode(String.self)
}
