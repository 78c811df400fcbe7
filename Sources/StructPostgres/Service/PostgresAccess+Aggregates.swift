import StructPostgresCore
import StructPostgresDriver

/// Figures over the rows a filter keeps, computed by PostgreSQL in one statement: sums, averages, extremes, and
/// several at once. Each takes the filters `fetch` takes, runs on a pooled connection (a replica when reads may go
/// there) or in the transaction, and is an operation of its own (`aggregate <table>`) with its span and metrics.
extension PostgresAccess {
    /// The sum of the values at `keyPath` over the rows matching `filter` (every row without it), nil values left
    /// out; `nil` when there is none. An integer property sums to an `Int`, checked: a total beyond its range fails
    /// with `invalidValue` rather than wrapping (see ``Summable``).
    ///
    /// ```swift
    /// let stock: Double? = try await db.sum(\BookEntity.price, of: BookModel.self, where: .equal("publisher", "Apress"))
    /// ```
    /// - Throws: `undefinedColumn` for a key path that names no column (a computed property, a `@Related` slot) and
    ///   `invalidValue` for a column that is not a number, before anything is sent.
    public func sum<Model: EntityConvertible, Value: Summable>(
        _ keyPath: KeyPath<Model.Entity, Value>, of type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> Value.Sum? {
        try await aggregate(of: type, .sum(keyPath), where: filter)
    }

    /// The average of the values at `keyPath` over the rows matching `filter`, nil values left out; `nil` when there
    /// is none. An integer property's average is PostgreSQL's exact one rounded once to a `Double`; a `Decimal`'s is
    /// a `Decimal` (see ``Summable``).
    ///
    /// ```swift
    /// let rating: Double? = try await db.average(\ReviewModel.stars, of: ReviewModel.self, where: .equal("bookID", bookID))
    /// ```
    /// - Throws: `undefinedColumn` for a key path that names no column and `invalidValue` for a column that is not a
    ///   number, before anything is sent.
    public func average<Model: EntityConvertible, Value: Summable>(
        _ keyPath: KeyPath<Model.Entity, Value>, of type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> Value.Average? {
        try await aggregate(of: type, .average(keyPath), where: filter)
    }

    /// The smallest value at `keyPath` over the rows matching `filter`, in the column's order; `nil` when no row
    /// matches.
    ///
    /// ```swift
    /// let first: Date? = try await db.min(\ReviewModel.createdAt, of: ReviewModel.self, where: \.bookID == bookID)
    /// ```
    public func min<Model: EntityConvertible, Value: Decodable & Sendable>(
        _ keyPath: KeyPath<Model.Entity, Value>, of type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> Value? {
        try await aggregate(of: type, .min(keyPath), where: filter)
    }

    /// The smallest value at an optional `keyPath` over the rows matching `filter`, nil values left out; `nil` when
    /// there is none.
    public func min<Model: EntityConvertible, Value: Decodable & Sendable>(
        _ keyPath: KeyPath<Model.Entity, Value?>, of type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> Value? {
        try await aggregate(of: type, .min(keyPath), where: filter)
    }

    /// The largest value at `keyPath` over the rows matching `filter`, in the column's order; `nil` when no row
    /// matches.
    ///
    /// ```swift
    /// let dearest: Double? = try await db.max(\BookEntity.price, of: BookModel.self)
    /// ```
    public func max<Model: EntityConvertible, Value: Decodable & Sendable>(
        _ keyPath: KeyPath<Model.Entity, Value>, of type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> Value? {
        try await aggregate(of: type, .max(keyPath), where: filter)
    }

    /// The largest value at an optional `keyPath` over the rows matching `filter`, nil values left out; `nil` when
    /// there is none.
    public func max<Model: EntityConvertible, Value: Decodable & Sendable>(
        _ keyPath: KeyPath<Model.Entity, Value?>, of type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> Value? {
        try await aggregate(of: type, .max(keyPath), where: filter)
    }

    /// Several figures over the rows matching `filter`, in one statement: one figure is its own value, several a
    /// tuple in the order given.
    ///
    /// ```swift
    /// let (books, cheapest, average) = try await db.aggregate(
    ///     of: BookModel.self, .count, .min(\.price), .average(\.price), where: .format("publisher == %@", "Apress"))
    /// ```
    /// - Throws: `undefinedColumn` for a key path that names no column, `invalidValue` for a column a figure cannot
    ///   take (a sum of text), before anything is sent.
    public func aggregate<Model: EntityConvertible, each Value>(
        of type: Model.Type, _ aggregates: repeat Aggregate<Model.Entity, each Value>, where filter: EntityFilter<Model.Entity>? = nil
    ) async throws -> (repeat each Value) {
        var query = AggregateQuery(filter: filter?.filter)
        for aggregate in repeat each aggregates { query.aggregates.append(aggregate.spec) }
        return try await operationPath.aggregate(Model.Entity.self, query) { rows in
            var column = 0
            func next<T: Decodable>(_ type: T.Type) throws -> T {
                defer { column += 1 }
                return try rows.value(T.self, row: 0, column: column)
            }
            return (repeat try next((each Value).self))
        }
    }
}
