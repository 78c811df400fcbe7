/// A ``Filter`` whose keys are key paths of the entity: a misspelt key does not compile.
///
/// ```swift
/// let cheap = try await service.fetch(BookModel.self, where: \BookEntity.price < 10 && \.publisher != nil)
/// let some = try await service.fetch(ReviewModel.self, where: .in(\.bookID, ids) && .contains(\.content, "great", caseInsensitive: true))
/// ```
/// Key paths name stored properties of the entity; their columns follow the entity's ``EntityProtocol/columnNaming``.
/// Relationship paths (`author.name`) and `ANY`/`ALL`/`NONE` are written as format strings.
public struct EntityFilter<Entity: EntityProtocol>: Sendable {
    public let filter: Filter

    init(_ node: Filter.Node) { filter = Filter(node: node) }

    static func key<Value>(_ keyPath: KeyPath<Entity, Value>) -> String { KeyPathNames.name(of: keyPath) }

    /// Rows whose value at `keyPath` is one of `values`, with one parameter.
    public static func `in`<Value: Encodable & Sendable>(_ keyPath: KeyPath<Entity, Value>, _ values: [Value]) -> Self {
        Self(.among(key(keyPath), values))
    }

    /// Rows whose value at `keyPath` lies between `lower` and `upper`, both included.
    public static func between<Value: Encodable & Sendable>(_ keyPath: KeyPath<Entity, Value>, _ lower: Value, _ upper: Value) -> Self {
        Self(.between(key(keyPath), lower, upper))
    }

    /// Text at `keyPath` that contains `text`.
    public static func contains<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ text: String, caseInsensitive: Bool = false) -> Self {
        textFilter(keyPath, .contains, text, caseInsensitive)
    }

    /// Text at `keyPath` that begins with `text`.
    public static func beginsWith<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ text: String, caseInsensitive: Bool = false) -> Self {
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
    public static func matches<Text: TextValue>(_ keyPath: KeyPath<Entity, Text>, _ pattern: String, caseInsensitive: Bool = false) -> Self {
        textFilter(keyPath, .matches, pattern, caseInsensitive)
    }

    private static func textFilter<Text>(
        _ keyPath: KeyPath<Entity, Text>, _ op: Filter.Operator, _ text: String, _ caseInsensitive: Bool
    ) -> Self {
        Self(.compare(key(keyPath), op, text, Filter.Options(caseInsensitive: caseInsensitive)))
    }

    public static func && (lhs: Self, rhs: Self) -> Self { Self(.all([lhs.filter.node, rhs.filter.node])) }
    public static func || (lhs: Self, rhs: Self) -> Self { Self(.any([lhs.filter.node, rhs.filter.node])) }
    public static prefix func ! (filter: Self) -> Self { Self(.not(filter.filter.node)) }
}

/// A property holding text: `String` or `String?`.
public protocol TextValue {}
extension String: TextValue {}
extension Optional: TextValue where Wrapped == String {}

public func == <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter(.compare(EntityFilter.key(lhs), .equal, rhs, Filter.Options()))
}

public func != <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter(.compare(EntityFilter.key(lhs), .notEqual, rhs, Filter.Options()))
}

public func < <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter(.compare(EntityFilter.key(lhs), .less, rhs, Filter.Options()))
}

public func <= <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter(.compare(EntityFilter.key(lhs), .lessOrEqual, rhs, Filter.Options()))
}

public func > <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter(.compare(EntityFilter.key(lhs), .greater, rhs, Filter.Options()))
}

public func >= <Entity: EntityProtocol, Value: Encodable & Sendable>(lhs: KeyPath<Entity, Value>, rhs: Value) -> EntityFilter<Entity> {
    EntityFilter(.compare(EntityFilter.key(lhs), .greaterOrEqual, rhs, Filter.Options()))
}

extension SortKey {
    /// Ascending by a key path of the entity: `.ascending(\BookEntity.title)`.
    public static func ascending<Entity: EntityProtocol, Value>(_ keyPath: KeyPath<Entity, Value>, nulls: Nulls = .default) -> SortKey {
        SortKey(KeyPathNames.name(of: keyPath), ascending: true, nulls: nulls)
    }

    /// Descending by a key path of the entity: `.descending(\ReviewModel.createdAt)`.
    public static func descending<Entity: EntityProtocol, Value>(_ keyPath: KeyPath<Entity, Value>, nulls: Nulls = .default) -> SortKey {
        SortKey(KeyPathNames.name(of: keyPath), ascending: false, nulls: nulls)
    }
}

extension CoreDataServiceProtocol {
    /// The models matching a typed filter on their entity's key paths.
    ///
    /// ```swift
    /// let reviews = try await service.fetch(ReviewModel.self, where: \.bookID == book.uuid,
    ///                                       sortedBy: [.descending(\ReviewModel.createdAt)], limit: 50)
    /// ```
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>, sortedBy sort: [SortKey] = [], limit: Int? = nil,
        offset: Int? = nil, loading: Loading = .default
    ) async throws -> [Model] {
        try await fetch(type, where: filter.filter, sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// How many rows match a typed filter.
    public func count<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>) async throws -> Int {
        try await count(type, where: filter.filter)
    }

    /// Deletes the rows matching a typed filter with one `DELETE`.
    @discardableResult
    public func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>) async throws -> Int {
        try await deleteAll(type, where: filter.filter)
    }
}
