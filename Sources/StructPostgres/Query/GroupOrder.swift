import StructPostgresCore
import StructPostgresDriver

/// One ORDER BY term of a grouped query: by a figure (``Aggregate``) or by a key the query groups by.
///
/// ```swift
/// let topAuthors = try await db.groups(of: BookModel.self, by: \.authorID, .count,
///                                      sortedBy: [.descending(.count), .ascending(\.authorID)], limit: 10)
/// ```
public struct GroupOrder<Entity: EntityProtocol>: Sendable {
    let term: GroupOrderTerm

    private init(_ subject: GroupOrderTerm.Subject, ascending: Bool, nulls: SortKey.Nulls) {
        term = GroupOrderTerm(subject: subject, ascending: ascending, nulls: nulls)
    }

    /// Ascending by a figure.
    public static func ascending<V: Decodable & Sendable>(_ aggregate: Aggregate<Entity, V>, nulls: SortKey.Nulls = .default) -> Self {
        Self(.aggregate(aggregate.spec), ascending: true, nulls: nulls)
    }

    /// Descending by a figure.
    public static func descending<V: Decodable & Sendable>(_ aggregate: Aggregate<Entity, V>, nulls: SortKey.Nulls = .default) -> Self {
        Self(.aggregate(aggregate.spec), ascending: false, nulls: nulls)
    }

    /// Ascending by a key the query groups by.
    public static func ascending<V>(_ keyPath: KeyPath<Entity, V>, nulls: SortKey.Nulls = .default) -> Self {
        Self(.key(Aggregate<Entity, Int>.key(keyPath)), ascending: true, nulls: nulls)
    }

    /// Descending by a key the query groups by.
    public static func descending<V>(_ keyPath: KeyPath<Entity, V>, nulls: SortKey.Nulls = .default) -> Self {
        Self(.key(Aggregate<Entity, Int>.key(keyPath)), ascending: false, nulls: nulls)
    }
}

/// A ``GroupOrder`` without its entity type.
struct GroupOrderTerm: Sendable {
    enum Subject: Sendable {
        case aggregate(AggregateSpec)
        /// A grouping key's property, or why its key path names none.
        case key(Result<String, StructPostgresError>)
    }

    let subject: Subject
    let ascending: Bool
    let nulls: SortKey.Nulls
}
