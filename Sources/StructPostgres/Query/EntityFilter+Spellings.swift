import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Every spelling of a filter, as the value each filtering verb takes: key paths of the entity, keys by name,
/// an NSPredicate format string, Swift's `#Predicate`, or a ``Filter`` built elsewhere.
///
/// ```swift
/// try await db.fetch(ReviewModel.self, where: \.bookID == book.uuid)
/// try await db.fetch(ReviewModel.self, where: .equal("bookID", book.uuid) && .isNotNull("content"))
/// try await db.fetch(ReviewModel.self, where: .format("bookID == %@ AND content CONTAINS[c] %@", book.uuid, "great"))
/// try await db.fetch(ReviewModel.self, where: .predicate(#Predicate<ReviewModel> { $0.bookID == bookID }))
/// ```
///
/// A filter that cannot be compiled (a malformed format string, a key path that names no stored property, a
/// predicate PostgreSQL cannot decide as Swift would) fails the verb that receives it, with an error naming the
/// part: the call itself for `fetch`, `fetchOne`, `count`, `exists` and `deleteAll`; the first step of the
/// sequence for `stream` and `observe`.
extension EntityFilter {
    /// The filter `filter`, built without key paths (by name, from a format string or a predicate).
    public init(_ filter: Filter) { self.filter = filter }

    /// The filter of an NSPredicate format string, as ported code writes it (see ``Filter/init(format:_:)``). A
    /// malformed string or arguments that do not match its placeholders fail the verb that receives the filter.
    ///
    /// ```swift
    /// let reviews = try await db.fetch(ReviewModel.self, where: .format("bookID == %@", book.uuid))
    /// ```
    public static func format(_ format: String, _ arguments: (any Encodable & Sendable)?...) -> Self {
        Self.format(format, arguments: arguments)
    }

    /// The filter of a format string and an array of arguments, for code that builds both at run time.
    public static func format(_ format: String, arguments: [(any Encodable & Sendable)?]) -> Self {
        do {
            return Self(try Filter(format: format, arguments: arguments))
        } catch {
            return Self(.invalid(StructPostgresError.from(error, sql: nil)))
        }
    }

    /// The filter of a `#Predicate` on the entity (see ``Filter/init(_:)``): its input type is inferred.
    ///
    /// ```swift
    /// let cheap = try await db.fetch(BookModel.self, where: .predicate(#Predicate { $0.price < 10 }))
    /// ```
    public static func predicate(_ predicate: Predicate<Entity>) -> Self { Self(Filter(predicate)) }

    /// The filter of a `#Predicate` on the model whose entity this is.
    public static func predicate<Model: EntityConvertible>(_ predicate: Predicate<Model>) -> Self where Model.Entity == Entity {
        Self(Filter(predicate))
    }

    /// Rows whose `key` (a property or column name) equals `value`; `nil` matches rows where it is NULL.
    public static func equal(_ key: String, _ value: some Encodable & Sendable) -> Self { Self(Filter.equal(key, value)) }

    /// Rows whose `key` differs from `value`, NULL included (as NSPredicate's `!=` does).
    public static func notEqual(_ key: String, _ value: some Encodable & Sendable) -> Self { Self(Filter.notEqual(key, value)) }

    /// Rows whose `key` compares with `value` as `op` says.
    public static func compare(
        _ key: String, _ op: Filter.Operator, _ value: some Encodable & Sendable, options: Filter.Options = Filter.Options()
    ) -> Self {
        Self(Filter.compare(key, op, value, options: options))
    }

    /// Rows whose `key` lies between `lower` and `upper`, both included.
    public static func between<Value: Encodable & Sendable>(_ key: String, _ lower: Value, _ upper: Value) -> Self {
        Self(Filter.between(key, lower, upper))
    }

    /// Rows whose `key` is one of `values`, with one parameter (see ``Filter/in(_:_:)``).
    public static func `in`<Value: Encodable & Sendable>(_ key: String, _ values: [Value]) -> Self { Self(Filter.in(key, values)) }

    /// Rows where `key` is NULL.
    public static func isNull(_ key: String) -> Self { Self(Filter.isNull(key)) }

    /// Rows where `key` is not NULL.
    public static func isNotNull(_ key: String) -> Self { Self(Filter.isNotNull(key)) }

    /// Every row (`TRUEPREDICATE`) or none (`FALSEPREDICATE`).
    public static func constant(_ value: Bool) -> Self { Self(Filter.constant(value)) }
}
