import StructPostgresCore
import StructPostgresDriver

/// One figure computed by PostgreSQL over the rows a filter keeps, or over each group of them: a count, a sum, an
/// average, a minimum or a maximum of a stored property. `Value` is the figure's Swift type, which follows the
/// property's (see ``Summable``); a figure SQL gives as NULL (a sum or average of no value) is `nil`.
///
/// Pass figures to ``PostgresAccess/aggregate(of:_:where:)`` and to `groups(of:by:...)`:
///
/// ```swift
/// let (books, average) = try await db.aggregate(of: BookModel.self, .count, .average(\.price))
/// let perAuthor = try await db.groups(of: BookModel.self, by: \.authorID, .count, .max(\.price), having: .count > 2)
/// ```
///
/// Key paths name stored properties of the entity, as typed filters do; one that names no column (a computed
/// property, a `@Related` slot) fails the call that receives the figure, by name, before anything is sent.
public struct Aggregate<Entity: EntityProtocol, Value: Decodable & Sendable>: Sendable {
    var spec: AggregateSpec

    init(_ function: AggregateSpec.Function, _ key: Result<String, StructPostgresError>?, _ name: (String?) -> String) {
        spec = AggregateSpec(function: function, key: key, name: name)
    }

    /// The property `keyPath` names, or why it names none.
    static func key<V>(_ keyPath: KeyPath<Entity, V>) -> Result<String, StructPostgresError> {
        Result { () throws(StructPostgresError) -> String in try KeyPathNames.name(of: keyPath) }
    }

    /// The same figure under another name: the key a `Decodable` result of yours reads it by (see
    /// `groups(of:by:...as:)`). Names default to `count`, and `sumPrice`, `averagePrice`, `minPrice`, `maxPrice`,
    /// `countPrice` after the property.
    ///
    /// ```swift
    /// struct AuthorShelf: Decodable, Sendable { var authorID: UUID?; var books: Int }
    /// let shelves = try await db.groups(of: BookModel.self, by: \.authorID, .count.named("books"), as: AuthorShelf.self)
    /// ```
    public func named(_ name: String) -> Self {
        var copy = self
        copy.spec.name = name
        return copy
    }
}

extension Aggregate {
    /// The number of rows: SQL's `count(*)`; 0 when no row matches.
    public static var count: Aggregate<Entity, Int> { .init(.count, nil) { _ in "count" } }

    /// The number of rows whose value at `keyPath` is not nil: SQL's `count(column)`.
    public static func count<V>(_ keyPath: KeyPath<Entity, V>) -> Aggregate<Entity, Int> {
        .init(.countValues, key(keyPath)) { "count" + capitalized($0) }
    }

    /// The sum of the values at `keyPath` (nil values left out), as ``Summable`` says; `nil` when there is none.
    public static func sum<V: Summable>(_ keyPath: KeyPath<Entity, V>) -> Aggregate<Entity, V.Sum?> {
        .init(.sum, key(keyPath)) { "sum" + capitalized($0) }
    }

    /// The average of the values at `keyPath` (nil values left out), as ``Summable`` says; `nil` when there is none.
    public static func average<V: Summable>(_ keyPath: KeyPath<Entity, V>) -> Aggregate<Entity, V.Average?> {
        .init(.average, key(keyPath)) { "average" + capitalized($0) }
    }

    /// The smallest value at `keyPath` in the column's order (a text column's collation; NaN above every number, as
    /// in PostgreSQL's `ORDER BY`); `nil` when there is none.
    public static func min<V: Decodable & Sendable>(_ keyPath: KeyPath<Entity, V>) -> Aggregate<Entity, V?> {
        .init(.min, key(keyPath)) { "min" + capitalized($0) }
    }

    /// The smallest value at an optional `keyPath`, nil values left out; `nil` when there is none.
    public static func min<V: Decodable & Sendable>(_ keyPath: KeyPath<Entity, V?>) -> Aggregate<Entity, V?> {
        .init(.min, key(keyPath)) { "min" + capitalized($0) }
    }

    /// The largest value at `keyPath` in the column's order (NaN above every number); `nil` when there is none.
    public static func max<V: Decodable & Sendable>(_ keyPath: KeyPath<Entity, V>) -> Aggregate<Entity, V?> {
        .init(.max, key(keyPath)) { "max" + capitalized($0) }
    }

    /// The largest value at an optional `keyPath`, nil values left out; `nil` when there is none.
    public static func max<V: Decodable & Sendable>(_ keyPath: KeyPath<Entity, V?>) -> Aggregate<Entity, V?> {
        .init(.max, key(keyPath)) { "max" + capitalized($0) }
    }

    private static func capitalized(_ name: String?) -> String {
        guard let name, let first = name.first else { return "" }
        return first.uppercased() + name.dropFirst()
    }
}

/// An aggregate without its types: what the read layer compiles to SQL.
struct AggregateSpec: Sendable {
    enum Function: String, Sendable {
        case count, countValues, sum, average, min, max

        /// As messages name it.
        var sqlName: String {
            switch self {
            case .count, .countValues: "count"
            case .sum: "sum"
            case .average: "average"
            case .min: "min"
            case .max: "max"
            }
        }
    }

    let function: Function
    /// The property the figure reads (`nil` for `count(*)`), or why its key path names none.
    let key: Result<String, StructPostgresError>?
    /// The result's name, for a `Decodable` result.
    var name: String

    init(function: Function, key: Result<String, StructPostgresError>?, name: (String?) -> String) {
        self.function = function
        self.key = key?.mapError { error in
            var named = error
            named.message = "\(function.sqlName): \(error.message)"
            return named
        }
        self.name = name(try? key?.get())
    }

    /// Why the figure cannot be computed, known before anything is sent: its key path names no column.
    var refusal: StructPostgresError? {
        if case .failure(let error)? = key { return error }
        return nil
    }

    /// What the figure is, for messages: `sum(price)`.
    var label: String {
        switch key {
        case nil: "count(*)"
        case .success(let name)?: "\(function.sqlName)(\(name))"
        case .failure?: "\(function.sqlName)(?)"
        }
    }
}
