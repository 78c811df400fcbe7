import StructPostgresCore
import StructPostgresDriver

/// Which groups a grouped query keeps, by their figures: SQL's `HAVING`. Compare an ``Aggregate`` with a value, and
/// combine with `&&`, `||` and `!`.
///
/// ```swift
/// let prolific = try await db.groups(of: BookModel.self, by: \.authorID, .count, .average(\.price),
///                                    having: .count >= 3 && .average(\.price) < 20)
/// ```
///
/// A figure that is nil (the average of no value) matches no comparison but `== nil`, and its negation matches it,
/// as filters treat a NULL column. Only `groups(of:by:...)` takes one, with at least one key to group by: without a
/// grouping the call fails by name, before anything is sent.
public struct GroupFilter<Entity: EntityProtocol>: Sendable {
    let node: GroupFilterNode

    init(_ node: GroupFilterNode) { self.node = node }

    /// Groups both filters keep.
    public static func && (lhs: Self, rhs: Self) -> Self { Self(.all([lhs.node, rhs.node])) }
    /// Groups either filter keeps.
    public static func || (lhs: Self, rhs: Self) -> Self { Self(.any([lhs.node, rhs.node])) }
    /// Groups `filter` does not keep.
    public static prefix func ! (filter: Self) -> Self { Self(.not(filter.node)) }
}

/// A ``GroupFilter`` without its entity type.
indirect enum GroupFilterNode: Sendable {
    case compare(AggregateSpec, Filter.Operator, any Encodable & Sendable)
    case all([GroupFilterNode])
    case any([GroupFilterNode])
    case not(GroupFilterNode)

    /// The figures the filter compares.
    var aggregates: [AggregateSpec] {
        switch self {
        case .compare(let aggregate, _, _): [aggregate]
        case .all(let nodes), .any(let nodes): nodes.flatMap(\.aggregates)
        case .not(let inner): inner.aggregates
        }
    }
}

/// Groups whose figure equals `rhs`.
public func == <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .equal, rhs))
}
/// Groups whose figure differs from `rhs`.
public func != <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .notEqual, rhs))
}
/// Groups whose figure is less than `rhs`.
public func < <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .less, rhs))
}
/// Groups whose figure is at most `rhs`.
public func <= <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .lessOrEqual, rhs))
}
/// Groups whose figure is greater than `rhs`.
public func > <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .greater, rhs))
}
/// Groups whose figure is at least `rhs`.
public func >= <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .greaterOrEqual, rhs))
}

/// Groups whose figure (which may be nil) equals `rhs`.
public func == <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value?>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .equal, rhs))
}
/// Groups whose figure (which may be nil) differs from `rhs`, nil included.
public func != <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value?>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .notEqual, rhs))
}
/// Groups whose figure is not nil and less than `rhs`.
public func < <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value?>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .less, rhs))
}
/// Groups whose figure is not nil and at most `rhs`.
public func <= <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value?>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .lessOrEqual, rhs))
}
/// Groups whose figure is not nil and greater than `rhs`.
public func > <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value?>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .greater, rhs))
}
/// Groups whose figure is not nil and at least `rhs`.
public func >= <Entity, Value: Codable & Sendable>(lhs: Aggregate<Entity, Value?>, rhs: Value) -> GroupFilter<Entity> {
    GroupFilter(.compare(lhs.spec, .greaterOrEqual, rhs))
}
