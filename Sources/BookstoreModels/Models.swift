import Foundation
import StructPostgres

/// The book store's models, ported from the StructCoreData demo: structs in the business logic,
/// entities (rows) at the edge, relationships loaded with the rows. Shared by the example app (`Bookstore`), the
/// web service (`Examples/BookstoreServer`) and the tests.
public enum BookstoreSchema {
    /// Every model the book store stores: what `schema verify`, `migrate draft` and the schema tests compare with
    /// the database.
    public static let models: [any EntityConvertible.Type] = [
        StoreModel.self, BookModel.self, AuthorModel.self, ReviewModel.self, UserModel.self,
    ]
}

/// A user's role.
public enum Role: String, Codable, Sendable {
    case reader, critic, admin
}

/// A struct that is its own entity; `invitedBy` is a self-reference.
public struct UserModel: StoredModel, Equatable {
    public static let table = "users"
    public static let relationships: [Relationship<Self>] = [.toOne("invitedBy", \.$invitedBy)]
    public let uuid: UUID
    public var name: String
    public var avatarURL: URL?
    public var role: Role
    public var invitedByID: UUID?
    @Related public var invitedBy: UserModel?
}

public struct AuthorModel: StoredModel, Equatable {
    public static let table = "authors"
    public let uuid: UUID
    public var name: String

    public init(uuid: UUID, name: String) {
        self.uuid = uuid
        self.name = name
    }
}

/// A store owns a set of books, through the join table `store_books`.
public struct StoreModel: Codable, Sendable, Equatable {
    public let uuid: UUID
    public var brand: String
    /// `nil` when not loaded: writing the store then leaves its set alone.
    public var books: [BookModel]?

    public init(uuid: UUID, brand: String, books: [BookModel]? = nil) {
        self.uuid = uuid
        self.brand = brand
        self.books = books
    }
}

public struct StoreEntity: EntityProtocol {
    public static let table = "stores"
    public static let relationships: [Relationship<Self>] = [
        .toMany("books", \.$books, through: "store_books", orderedBy: [.ascending("title")])
    ]
    public var uuid: UUID
    public var brand: String
    @Related public var books: [BookEntity]

    public func toModel() -> StoreModel {
        StoreModel(uuid: uuid, brand: brand, books: $books.loaded?.map { $0.toModel() })
    }
}

extension StoreModel: EntityConvertible {
    public func toEntity(context: EntityContext) throws -> StoreEntity {
        var store = StoreEntity(uuid: uuid, brand: brand)
        if let books { store.books = try books.map { try context.insert($0) } }
        return store
    }
}

/// A book has an author (to-one) and reviews that point back at it (a back reference).
public struct BookModel: Codable, Sendable, Equatable {
    public let uuid: UUID
    public var title: String?
    public var price: Double?
    public var publisher: String?
    public var author: AuthorModel?
    public var reviews: [ReviewModel]?

    public init(
        uuid: UUID, title: String? = nil, price: Double? = nil, publisher: String? = nil, author: AuthorModel? = nil,
        reviews: [ReviewModel]? = nil
    ) {
        self.uuid = uuid
        self.title = title
        self.price = price
        self.publisher = publisher
        self.author = author
        self.reviews = reviews
    }
}

public struct BookEntity: EntityProtocol {
    public static let table = "books"
    public static let relationships: [Relationship<Self>] = [
        .toOne("author", \.$author),
        .toMany("reviews", \.$reviews, orderedBy: [.ascending("createdAt")]),
    ]
    public var uuid: UUID
    public var title: String?
    public var price: Double
    public var publisher: String?
    public var authorID: UUID?
    @Related public var author: AuthorModel?
    @Related public var reviews: [ReviewModel]

    public func toModel() -> BookModel {
        BookModel(uuid: uuid, title: title, price: price, publisher: publisher, author: author, reviews: $reviews.loaded)
    }
}

extension BookModel: EntityConvertible {
    public func toEntity(context: EntityContext) throws -> BookEntity {
        // Reviews travel with their book when it carries them; each holds the book's uuid.
        for review in reviews ?? [] { try context.insert(review) }
        return BookEntity(
            uuid: uuid, title: title, price: price ?? 0, publisher: publisher,
            authorID: try author.map { try context.insert($0).uuid })
    }
}

/// A review holds its book's uuid: a back reference, fetched by `bookID`.
public struct ReviewModel: StoredModel, Equatable {
    public static let table = "reviews"
    public static let relationships: [Relationship<Self>] = [.toOne("user", \.$user)]
    public let uuid: UUID
    public var bookID: UUID
    public var content: String?
    /// One to five; `nil` for a review without a rating.
    public var stars: Int?
    public var createdAt: Date
    public var userID: UUID?
    @Related public var user: UserModel?
}

// Public initializers: a memberwise initializer is internal to its module.

extension UserModel {
    public init(uuid: UUID, name: String, avatarURL: URL? = nil, role: Role, invitedByID: UUID? = nil, invitedBy: UserModel? = nil) {
        self.uuid = uuid
        self.name = name
        self.avatarURL = avatarURL
        self.role = role
        self.invitedByID = invitedByID
        _invitedBy = invitedBy.map { Related(wrappedValue: $0) } ?? Related()
    }
}

extension StoreEntity {
    public init(uuid: UUID, brand: String) {
        self.uuid = uuid
        self.brand = brand
        _books = Related()
    }
}

extension BookEntity {
    public init(uuid: UUID, title: String? = nil, price: Double, publisher: String? = nil, authorID: UUID? = nil) {
        self.uuid = uuid
        self.title = title
        self.price = price
        self.publisher = publisher
        self.authorID = authorID
        _author = Related()
        _reviews = Related()
    }
}

extension ReviewModel {
    public init(
        uuid: UUID, bookID: UUID, content: String? = nil, stars: Int? = nil, createdAt: Date, userID: UUID? = nil, user: UserModel? = nil
    ) {
        self.uuid = uuid
        self.bookID = bookID
        self.content = content
        self.stars = stars
        self.createdAt = createdAt
        self.userID = userID
        _user = user.map { Related(wrappedValue: $0) } ?? Related()
    }
}
