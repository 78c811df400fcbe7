import Foundation
import StructPostgres

/// The book store's models, ported from the StructCoreData demo.
enum Role: String, Codable, Sendable {
    case reader, critic, admin
}

/// A struct that is its own entity: no second type.
struct UserModel: StoredModel {
    static let table = "users"
    let uuid: UUID
    var name: String
    var avatarURL: URL?
    var role: Role
}

struct AuthorModel: StoredModel {
    static let table = "authors"
    let uuid: UUID
    var name: String
}

struct StoreModel: StoredModel {
    static let table = "stores"
    let uuid: UUID
    var brand: String
}

/// A model with an entity of its own, as in the original demo.
struct BookModel: Sendable {
    let uuid: UUID
    var title: String?
    var price: Double?
    var publisher: String?
    var author: AuthorModel?
}

struct BookEntity: EntityProtocol {
    static let table = "books"
    var uuid: UUID
    var title: String?
    var price: Double
    var publisher: String?
    var authorID: UUID?

    func toModel() -> BookModel {
        BookModel(uuid: uuid, title: title, price: price, publisher: publisher, author: nil)
    }
}

extension BookModel: EntityConvertible {
    func toEntity(context: EntityContext) throws -> BookEntity {
        BookEntity(
            uuid: uuid, title: title, price: price ?? 0, publisher: publisher,
            authorID: try author.map { try context.insert($0).uuid })
    }
}

/// A review holds its book's uuid: a back reference.
struct ReviewModel: StoredModel {
    static let table = "reviews"
    let uuid: UUID
    var bookID: UUID
    var content: String?
    var createdAt: Date
    var userID: UUID?
}

/// A book in a store's set: a row of the join table.
struct StoreBook: StoredModel {
    static let table = "store_books"
    static let uniqueKey = ["storeID", "bookID"]
    var storeID: UUID
    var bookID: UUID
}
