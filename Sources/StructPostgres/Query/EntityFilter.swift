import StructPostgresCore
import StructPostgresDriver

/// A ``Filter`` whose keys are key paths of the entity: a misspelt key does not compile.
///
/// ```swift
/// let cheap = try await service.fetch(BookModel.self, where: \BookEntity.price < 10 && \.publisher != nil)
/// let some = try await service.fetch(ReviewModel.self, where: .in(\.bookID, ids) && .contains(\.content, "great", caseInsensitive: true))
/// ```
/// Key paths name stored properties of the entity; their columns follow the entity's ``EntityProtocol/columnNaming``.
/// Relationship paths (`author.name`) and `ANY`/`ALL`/`NONE` are written as format strings.
public struct EntityFilter<Entity: EntityProtocol>: Sendable {
    /// The same filter with keys by name, as ``Filter`` spells it.
    public let filter: Filter

    init(_ node: Filter.Node) { filter = Filter(node: node) }

    /// The filter `node` makes of the column name of `keyPath`; one that fails when used, if `keyPath` names none.
    static func keyed<Value>(_ keyPath: KeyPath<Entity, Value>, _ node: (String) -> Filter.Node) -> Self {
        do {
            return Self(node(try KeyPathNames.name(of: keyPath)))
        } catch {
            return Self(.invalid(error))
        }
    }

    /// Rows whose value at `keyPath` is one of `values`, with one parameter.
    public static func `in`<Value: Encodable & Sendable>(_ keyPath: KeyPath<Entity, Value>, _ values: [Value]) -> Self {
        keyed(keyPath) { .among($0, values) }
    }

    /// Rows whose value at `keyPath` lies between `lower` and `upper`, both included.
    public static func between<Value: Encodable & Sendable>(_ keyPath: KeyPath<Entity, Value>, _ lower: Value, _ upper: Value) -> Self {
        keyed(keyPath) { .between($0, lower, upper) }
    }

    /// Text at `keyPath` that contains `text`.
    public static func contains<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ text: String, caseInsensitive: Bool = false) -> Self {
        textFilter(keyPath, .contains, text, caseInsensitive)
    }

    /// Text at `keyPath` that begins with `text`.
    public static func beginsWith<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ text: String, caseInsensitive: Bool = false) -> Self
    {
        textFilter(keyPath, .beginsWith, text, caseInsensitive)
    }

    /// Text at `keyPath` that ends with `text`.
    public static func endsWith<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ text: String, caseInsensitive: Bool = false) -> Self {
        textFilter(keyPath, .endsWith, text, caseInsensitive)
    }

    /// Text at `keyPath` matching `pattern`, whose `*` stands for any text and `?` for one character.
    public static func like<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ pattern: String, caseInsensitive: Bool = false) -> Self {
        textFilter(keyPath, .like, pattern, caseInsensitive)
    }

    /// Text at `keyPath` that a regular expression matches as a whole (NSPredicate's `MATCHES`).
    public static func matches<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ pattern: String, caseInsensitive: Bool = false) -> Self
    {
        textFilter(keyPath, .matches, pattern, caseInsensitive)
    }

    private static func textFilter<Text>(
        _ keyPath: KeyPath<Entity, Text>, _ op: Filter.Operator, _ text: String, _ caseInsensitive: Bool
    ) -> Self {
        keyed(keyPath) { .compare($0, op, text, Filter.Options(caseInsensitive: caseInsensitive)) }
    }

    /// Rows both filters match.
    public static func && (lhs: Self, rhs: Self) -> Self { Self(.all([lhs.filter.node, rhs.filter.node])) }
    /// Rows either filter matches.
    public static func || (lhs: Self, rhs: Self) -> Self { Self(.any([lhs.filter.node, rhs.filter.node])) }
    /// Rows `filter` does not match.
    public static prefix func ! (filter: Self) -> Self { Self(.not(filter.filter.node)) }
}

/// A property holding text: `String` or `String?`.
public protocol TextValue {}
extension String: TextValue {}
extension Optional: TextValue where Wrapped == String {}

/// Rows whose value at `lhs` equals `rhs`; `nil` matches rows where it is NULL.
public func == <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter.keyed(lhs) { .compare($0, .equal, rhs, Filter.Options()) }
}

/// Rows whose value at `lhs` differs from `rhs`, NULL included (as NSPredicate's `!=` does).
public func != <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter.keyed(lhs) { .compare($0, .notEqual, rhs, Filter.Options()) }
}

/// Rows whose value at `lhs` is less than `rhs`.
public func < <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter.keyed(lhs) { .compare($0, .less, rhs, Filter.Options()) }
}

/// Rows whose value at `lhs` is less than or equal to `rhs`.
public func <= <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter.keyed(lhs) { .compare($0, .lessOrEqual, rhs, Filter.Options()) }
}

/// Rows whose value at `lhs` is greater than `rhs`.
public func > <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter.keyed(lhs) { .compare($0, .greater, rhs, Filter.Options()) }
}

/// Rows whose value at `lhs` is greater than or equal to `rhs`.
public func >= <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter.keyed(lhs) { .compare($0, .greaterOrEqual, rhs, Filter.Options()) }
}

extension SortKey {
    /// Ascending by a key path of the entity: `.ascending(\BookEntity.title)`.
    public static func ascending<Entity: EntityProtocol, Value>(_ keyPath: KeyPath<Entity, Value>, nulls: Nulls = .default) -> SortKey {
        SortKey(keyPath, ascending: true, nulls: nulls)
    }

    /// Descending by a key path of the entity: `.descending(\ReviewModel.createdAt)`.
    public static func descending<Entity: EntityProtocol, Value>(_ keyPath: KeyPath<Entity, Value>, nulls: Nulls = .default) -> SortKey {
        SortKey(keyPath, ascending: false, nulls: nulls)
    }
}
