import StructPostgresCore
import StructPostgresDriver

/// Figures per group of rows (SQL's `GROUP BY`): one row per distinct value of the keys, with its figures, as a
/// ``GroupRow`` or a `Decodable` of yours.
extension PostgresAccess {
    /// The figures of each group of the rows matching `filter` that share a value at `key`: the books per author,
    /// the average rating per book. `having` keeps groups by their figures; `sortedBy` orders them by a figure or
    /// the key; `limit` keeps the first ones.
    ///
    /// ```swift
    /// let perAuthor = try await db.groups(of: BookModel.self, by: \.authorID, .count, .average(\.price),
    ///                                     where: \.price > 0, having: .count >= 2, sortedBy: [.descending(.count)], limit: 10)
    /// for group in perAuthor {
    ///     let (books, averagePrice) = group.values
    ///     print(group.key?.uuidString ?? "no author", books, averagePrice ?? 0)
    /// }
    /// ```
    /// - Throws: `undefinedColumn` for a key path that names no column; `invalidValue` for a column a figure cannot
    ///   take, a sort by a key the query does not group by, a negative limit; all before anything is sent.
    public func groups<Model: EntityConvertible, Key: Decodable & Sendable, each Value>(
        of type: Model.Type, by key: KeyPath<Model.Entity, Key>, _ aggregates: repeat Aggregate<Model.Entity, each Value>,
        where filter: EntityFilter<Model.Entity>? = nil, having: GroupFilter<Model.Entity>? = nil,
        sortedBy sort: [GroupOrder<Model.Entity>] = [], limit: Int? = nil
    ) async throws -> [GroupRow<Key, repeat each Value>] {
        var query = AggregateQuery(filter: filter?.filter, keys: [Aggregate<Model.Entity, Int>.key(key)], grouped: true)
        query.add(repeat each aggregates, having: having, sort: sort, limit: limit)
        return try await operationPath.aggregate(Model.Entity.self, query, countsRows: true) { rows in
            try (0..<rows.count).map { row in
                var column = 1
                func next<T: Decodable>(_ type: T.Type) throws -> T {
                    defer { column += 1 }
                    return try rows.value(T.self, row: row, column: column)
                }
                return GroupRow(key: try rows.value(Key.self, row: row, column: 0), values: (repeat try next((each Value).self)))
            }
        }
    }

    /// The figures of each group of rows sharing the values at several keys, given as a tuple of key paths; the
    /// group's ``GroupRow/key`` is the tuple of their values. An empty tuple makes one group of every matching row.
    ///
    /// ```swift
    /// let shelves = try await db.groups(of: BookModel.self, by: (\.authorID, \.publisher), .count)
    /// for shelf in shelves { print(shelf.key.0?.uuidString ?? "-", shelf.key.1 ?? "-", shelf.values) }
    /// ```
    /// - Throws: as the single-key form does; `having` without a key is refused.
    public func groups<Model: EntityConvertible, each Key: Decodable & Sendable, each Value>(
        of type: Model.Type, by keys: (repeat KeyPath<Model.Entity, each Key>), _ aggregates: repeat Aggregate<Model.Entity, each Value>,
        where filter: EntityFilter<Model.Entity>? = nil, having: GroupFilter<Model.Entity>? = nil,
        sortedBy sort: [GroupOrder<Model.Entity>] = [], limit: Int? = nil
    ) async throws -> [GroupRow<(repeat each Key), repeat each Value>] {
        var query = AggregateQuery(filter: filter?.filter, grouped: true)
        for key in repeat each keys { query.keys.append(Aggregate<Model.Entity, Int>.key(key)) }
        query.add(repeat each aggregates, having: having, sort: sort, limit: limit)
        return try await operationPath.aggregate(Model.Entity.self, query, countsRows: true) { rows in
            try (0..<rows.count).map { row in
                var column = 0
                func next<T: Decodable>(_ type: T.Type) throws -> T {
                    defer { column += 1 }
                    return try rows.value(T.self, row: row, column: column)
                }
                let key = (repeat try next((each Key).self))
                return GroupRow(key: key, values: (repeat try next((each Value).self)))
            }
        }
    }

    /// The groups of `groups(of:by:...)` by one key, each decoded into a `Decodable` of yours
    /// whose properties are named as the key's property and the figures (``Aggregate/named(_:)``; by default
    /// `count`, `averagePrice`...).
    ///
    /// ```swift
    /// struct AuthorShelf: Decodable, Sendable { var authorID: UUID?; var count: Int; var averagePrice: Double? }
    /// let shelves = try await db.groups(of: BookModel.self, by: \.authorID, .count, .average(\.price), as: AuthorShelf.self)
    /// ```
    /// - Throws: as the typed form does; `undefinedColumn` naming a property of `Row` without a column of the result,
    ///   `invalidValue` for two results of one name.
    public func groups<Model: EntityConvertible, Key, each Value, Row: Decodable & Sendable>(
        of type: Model.Type, by key: KeyPath<Model.Entity, Key>, _ aggregates: repeat Aggregate<Model.Entity, each Value>,
        where filter: EntityFilter<Model.Entity>? = nil, having: GroupFilter<Model.Entity>? = nil,
        sortedBy sort: [GroupOrder<Model.Entity>] = [], limit: Int? = nil, as row: Row.Type
    ) async throws -> [Row] {
        var query = AggregateQuery(filter: filter?.filter, keys: [Aggregate<Model.Entity, Int>.key(key)], grouped: true, byName: true)
        query.add(repeat each aggregates, having: having, sort: sort, limit: limit)
        return try await operationPath.aggregate(Model.Entity.self, query, countsRows: true) { try GroupRowDecoder.decodeAll(Row.self, $0) }
    }

    /// The groups of several keys, each decoded into a `Decodable` of yours (see the single-key form).
    ///
    /// ```swift
    /// struct Shelf: Decodable, Sendable { var authorID: UUID?; var publisher: String?; var count: Int }
    /// let shelves = try await db.groups(of: BookModel.self, by: (\.authorID, \.publisher), .count, as: Shelf.self)
    /// ```
    public func groups<Model: EntityConvertible, each Key, each Value, Row: Decodable & Sendable>(
        of type: Model.Type, by keys: (repeat KeyPath<Model.Entity, each Key>), _ aggregates: repeat Aggregate<Model.Entity, each Value>,
        where filter: EntityFilter<Model.Entity>? = nil, having: GroupFilter<Model.Entity>? = nil,
        sortedBy sort: [GroupOrder<Model.Entity>] = [], limit: Int? = nil, as row: Row.Type
    ) async throws -> [Row] {
        var query = AggregateQuery(filter: filter?.filter, grouped: true, byName: true)
        for key in repeat each keys { query.keys.append(Aggregate<Model.Entity, Int>.key(key)) }
        query.add(repeat each aggregates, having: having, sort: sort, limit: limit)
        return try await operationPath.aggregate(Model.Entity.self, query, countsRows: true) { try GroupRowDecoder.decodeAll(Row.self, $0) }
    }
}

extension AggregateQuery {
    /// Adds the figures, the group filter, the sort and the limit of a grouped query.
    mutating func add<Entity: EntityProtocol, each Value>(
        _ aggregates: repeat Aggregate<Entity, each Value>, having: GroupFilter<Entity>?, sort: [GroupOrder<Entity>], limit: Int?
    ) {
        for aggregate in repeat each aggregates { self.aggregates.append(aggregate.spec) }
        self.having = having?.node
        // A closure, not `\.term`: a key path literal in a function generic over a parameter pack traps at run time
        // in Swift 6.3 ("could not demangle keypath type").
        order = sort.map { $0.term }
        self.limit = limit
    }
}
