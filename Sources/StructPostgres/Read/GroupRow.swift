import StructPostgresCore
import StructPostgresDriver

/// One group of a grouped query: the values of the keys it was grouped by, and its figures, typed as the
/// ``Aggregate``s asked for them. One key is its own value; several are a tuple, in the order given.
///
/// ```swift
/// for group in try await db.groups(of: BookModel.self, by: \.authorID, .count, .average(\.price)) {
///     let (books, averagePrice) = group.values
///     print(group.key?.uuidString ?? "no author", books, averagePrice ?? 0)
/// }
/// ```
public struct GroupRow<Key: Sendable, each Value: Sendable>: Sendable {
    /// The value (or tuple of values) the group's rows share.
    public let key: Key
    /// The group's figures, in the order the aggregates were given (one figure is its own value).
    public let values: (repeat each Value)

    init(key: Key, values: (repeat each Value)) {
        self.key = key
        self.values = (repeat each values)
    }
}
