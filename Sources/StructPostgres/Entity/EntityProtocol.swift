import StructPostgresCore
import StructPostgresDriver

/// A row of one table: the stored side of the pattern (Core Data's `NSManagedObject` subclass).
///
/// Columns come from the entity's `CodingKeys`, turned into snake_case (``columnNaming``):
/// `authorID` is stored in `author_id`. The conflict key of upserts is ``uniqueKey``. A batch of 4,096
/// entities or more may be encoded (`encode(to:)`) and decoded (`init(from:)`) on two threads at once.
///
/// ```swift
/// struct BookEntity: EntityProtocol {
///     static let table = "books"
///     var uuid: UUID
///     var title: String?
///     var price: Double
///     var authorID: UUID?
///
///     func toModel() -> BookModel { BookModel(uuid: uuid, title: title, price: price) }
/// }
/// ```
public protocol EntityProtocol: Codable, Sendable {
    /// The struct this entity converts to.
    associatedtype Model

    /// The table, optionally schema-qualified (`"books"`, `"inventory.books"`).
    static var table: String { get }
    /// The columns (or property names) that identify a row: the `ON CONFLICT` target. Default `["uuid"]`.
    static var uniqueKey: [String] { get }
    /// How coding keys become column names. Default ``ColumnNaming/snakeCase``.
    static var columnNaming: ColumnNaming { get }
    /// The relationships whose ``Related`` slots fetches fill (and join-table sets writes replace). Default none.
    static var relationships: [Relationship<Self>] { get }
    /// The integer property (or column) holding the row's version, which makes every write of the entity conditional:
    /// an insert stores 1, an update applies only where the stored version is the entity's and stores one more, and a
    /// delete applies only at the entity's version (see *Concurrent edits*). A model never stored has version 0.
    /// Default `nil`: no version, the last write wins.
    ///
    /// ```swift
    /// struct Counter: StoredModel {
    ///     static let table = "counters"
    ///     static let versionKey: String? = "version"   // column version integer NOT NULL DEFAULT 1
    ///     var uuid: UUID
    ///     var value: Int
    ///     var version = 0
    /// }
    /// ```
    static var versionKey: String? { get }

    /// Builds the model from this row.
    func toModel() throws -> Model
}

extension EntityProtocol {
    /// The default conflict key: `["uuid"]`.
    public static var uniqueKey: [String] { ["uuid"] }
    /// The default: ``ColumnNaming/snakeCase``.
    public static var columnNaming: ColumnNaming { .snakeCase }
    /// The default: no relationships.
    public static var relationships: [Relationship<Self>] { [] }
    /// The default: no version.
    public static var versionKey: String? { nil }
}

/// A struct model that can be stored: the business side of the pattern.
///
/// ```swift
/// extension BookModel: EntityConvertible {
///     func toEntity(context: EntityContext) throws -> BookEntity {
///         BookEntity(uuid: uuid, title: title, price: price ?? 0, authorID: nil)
///     }
/// }
/// ```
public protocol EntityConvertible: Sendable {
    /// The row type this model is stored as.
    associatedtype Entity: EntityProtocol where Entity.Model == Self

    /// Builds the row for this model. Related models registered through `context` are written
    /// in the same unit of work, before this one. A call with 4,096 models or more may convert them on two
    /// threads at once, each half into its own context (joined afterwards as if converted in order).
    func toEntity(context: EntityContext) throws -> Entity
}

/// A struct that is its own entity: no second type, conversion is automatic.
///
/// ```swift
/// struct User: StoredModel {
///     static let table = "users"
///     var uuid: UUID
///     var name: String
///     var avatarURL: URL?          // column avatar_url
///     var role: Role               // enum Role: String, Codable — stored as text
/// }
/// try await service.update(entities: [User(uuid: UUID(), name: "Ada", role: .critic)])
/// ```
public protocol StoredModel: EntityProtocol, EntityConvertible where Entity == Self, Model == Self {}

extension StoredModel {
    /// Returns `self`: the model is its own entity.
    public func toModel() -> Self { self }
    /// Returns `self`; `context` is not used.
    public func toEntity(context: EntityContext) -> Self { self }
}
