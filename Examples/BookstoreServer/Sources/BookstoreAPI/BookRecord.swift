import Foundation
import StructPostgres

/// A book's own fields and its version (migration `0006_book_versions`): what `PUT /books/{id}` writes, and only at
/// the version the client read, which `GET /books/{id}` sends as its `ETag`. Every change of a book this server makes
/// goes through it, so the version counts them all. (The example data and the tests' seeds insert books through
/// `BookModel`, without a version: an insert leaves the column's default, 1.)
public struct BookRecord: StoredModel, Equatable {
    public static let table = "books"
    public static let versionKey: String? = "version"
    public let uuid: UUID
    public var title: String?
    public var price: Double
    public var publisher: String?
    public var authorID: UUID?
    /// 0 for a book not stored yet; otherwise the version it was read at.
    public var version: Int

    public init(uuid: UUID, title: String?, price: Double, publisher: String?, authorID: UUID?, version: Int) {
        self.uuid = uuid
        self.title = title
        self.price = price
        self.publisher = publisher
        self.authorID = authorID
        self.version = version
    }
}
