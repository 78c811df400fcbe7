import StructPostgresCore
import StructPostgresDriver

/// The slot of an entity that holds a relationship's related entities once they are loaded:
/// one entity (`Target?`) for a to-one relationship, an array (`[Target]`) for a to-many one.
///
/// A slot is not a column: rows are written and read without it. Fetches fill it (see ``Loading``);
/// assigning a to-many slot that goes through a join table replaces the parent's set when the entity
/// is written. A slot nobody loaded or assigned is *unloaded*: it reads as `nil` or `[]`, and writing the
/// entity leaves the stored set alone.
///
/// ```swift
/// struct StoreEntity: EntityProtocol {
///     static let table = "stores"
///     static let relationships: [Relationship<Self>] = [.toMany("books", \.$books, through: "store_books")]
///     var uuid: UUID
///     var brand: String
///     @Related var books: [BookEntity]
///
///     func toModel() -> StoreModel {
///         StoreModel(uuid: uuid, brand: brand, books: $books.loaded?.map { $0.toModel() })
///     }
/// }
/// ```
@propertyWrapper
public struct Related<Value: RelatedValue & Sendable>: Sendable {
    /// Boxed, so an entity can relate to its own type (a user invited by a user).
    private indirect enum Storage: Sendable {
        case unloaded
        case loaded(Value)
    }

    private var box: Storage

    /// An unloaded slot.
    public init() { box = .unloaded }

    /// A loaded slot; `nil` makes an unloaded one.
    public init(_ loaded: Value?) { box = loaded.map(Storage.loaded) ?? .unloaded }

    /// A loaded slot holding `wrappedValue`.
    public init(wrappedValue: Value) { box = .loaded(wrappedValue) }

    /// The related entities; `nil` or `[]` while unloaded. Setting it marks the slot loaded.
    public var wrappedValue: Value {
        get { storage ?? .unloaded }
        set { box = .loaded(newValue) }
    }

    private var storage: Value? {
        if case .loaded(let value) = box { return value }
        return nil
    }

    /// The slot itself, through `$name`: `$books.loaded`, `$books.isLoaded`, key paths in ``Relationship``.
    public var projectedValue: Related<Value> {
        get { self }
        set { self = newValue }
    }

    /// The related entities if the slot was loaded or assigned, otherwise `nil`.
    public var loaded: Value? { storage }

    /// Whether a fetch loaded the slot or `toEntity` assigned it.
    public var isLoaded: Bool { storage != nil }
}

/// What a ``Related`` slot can hold: `Optional` (to-one) or `Array` (to-many).
public protocol RelatedValue {
    /// The value an unloaded slot reads as.
    static var unloaded: Self { get }
}

extension Optional: RelatedValue {
    /// `nil`: what an unloaded to-one slot reads as.
    public static var unloaded: Self { nil }
}

extension Array: RelatedValue {
    /// `[]`: what an unloaded to-many slot reads as.
    public static var unloaded: Self { [] }
}

extension Related: RelationshipSlot {
    static var unloadedSlot: Self { Self() }
    static var slotValueType: Any.Type { Value.self }
}

extension Related: Equatable where Value: Equatable {
    /// Whether both slots hold equal ``loaded`` values; two unloaded slots are equal.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.loaded == rhs.loaded }
}

extension Related: Hashable where Value: Hashable {
    /// Hashes the ``loaded`` value.
    public func hash(into hasher: inout Hasher) { hasher.combine(loaded) }
}

/// Outside the row coders (JSON, for instance) a slot codes as its value; an unloaded one as nothing.
extension Related: Codable where Value: Codable {
    /// Decodes a slot from its value; nil (`null` in JSON) makes an unloaded slot.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(container.decodeNil() ? nil : try container.decode(Value.self))
    }

    /// Encodes the slot's value, or nil (`null` in JSON) for an unloaded slot.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let storage { try container.encode(storage) } else { try container.encodeNil() }
    }
}
