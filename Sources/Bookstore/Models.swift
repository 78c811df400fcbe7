import Foundation
import StructPostgres

/// The book store's models, ported from the StructCoreData demo: structs in the business logic,
/// entities (rows) at the edge, relationships loaded with the rows.
enum Role: String, Codable, Sendable {
    case reader, critic, admin
}

/// A struct that is its own entity; `invitedBy` is a self-reference.
struct UserModel: StoredModel, Equatable {
    static let table = "users"
    static let relationships: [Relationship<Self>] = [.toOne("invitedBy", \.$invitedBy)]
    let uuid: UUID
    var name: String
    var avatarURL: URL?
    var role: Role
    var invitedByID: UUID?
    @Related var invitedBy: UserModel?
}

struct AuthorModel: StoredModel, Equatable {
    static let table = "authors"
    let uuid: UUID
    var name: String
}

/// A store owns a set of books, through the join table `store_books`.
struct StoreModel: Codable, Sendable, Equatable {
    let uuid: UUID
    var brand: String
    /// `nil` when not loaded: writing the store then leaves its set alone.
    var books: [BookModel]?
}

struct StoreEntity: EntityProtocol {
    static let table = "stores"
    static let relationships: [Relationship<Self>] = [
        .toMany("books", \.$books, through: "store_books", orderedBy: [.ascending("title")]),
    ]
    var uuid: UUID
    var brand: String
    @Related var books: [BookEntity]

    func toModel() -> StoreModel {
        StoreModel(uuid: uuid, brand: brand, books: $books.loaded?.map { $0.toModel() })
    }
}

extension StoreModel: EntityConvertible {
    func toEntity(context: EntityContext) throws -> StoreEntity {
        var store = StoreEntity(uuid: uuid, brand: brand)
        if let books { store.books = try books.map { try context.insert($0) } }
        return store
    }
}

/// A book has an author (to-one) and reviews that point back at it (a back reference).
struct BookModel: Codable, Sendable, Equatable {
    let uuid: UUID
    var title: String?
    var price: Double?
    var publisher: String?
    var author: AuthorModel?
    var reviews: [ReviewModel]?
}

struct BookEntity: EntityProtocol {
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
    @Related var author: AuthorModel?
    @Related var reviews: [ReviewModel]

    func toModel() -> BookModel {
        BookModel(uuid: uuid, title: title, price: price, publisher: publisher, author: author, reviews: $reviews.loaded)
    }
}

extension BookModel: EntityConvertible {
    func toEntity(context: EntityContext) throws -> BookEntity {
        // Reviews travel with their book when it carries them; each holds the book's uuid.
        for review in reviews ?? [] { try context.insert(review) }
        return BookEntity(
            uuid: uuid, title: title, price: price ?? 0, publisher: publisher,
            authorID: try author.map { try context.insert($0).uuid })
    }
}

/// A review holds its book's uuid: a back reference, fetched by `bookID`.
struct ReviewModel: StoredModel, Equatable {
    static let table = "reviews"
    static let relationships: [Relationship<Self>] = [.toOne("user", \.$user)]
    let uuid: UUID
    var bookID: UUID
    var content: String?
    var createdAt: Date
    var userID: UUID?
    @Related var user: UserModel?
}
