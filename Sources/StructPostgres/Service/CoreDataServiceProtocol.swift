/// The service of the StructCoreData pattern, async and on PostgreSQL: fetch, update (upsert),
/// delete and count of struct models. ``PostgresService`` and ``PostgresTransaction`` implement it.
///
/// ```swift
/// func reviews(of book: BookModel, in store: some CoreDataServiceProtocol) async throws -> [ReviewModel] {
///     try await store.fetch(ReviewModel.self, where: .equal("bookID", book.uuid),
///                           sortedBy: [.ascending("createdAt")], limit: 50)
/// }
/// ```
public protocol CoreDataServiceProtocol: Sendable {
    /// The models whose rows match `filter`, in the order of `sortedBy`, at most `limit` of them,
    /// with the relationships `loading` names loaded (one query per relationship per level).
    func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter?, sortedBy sort: [SortKey], limit: Int?, offset: Int?, loading: Loading
    ) async throws -> [Model]

    /// How many rows of the model's table match `filter`.
    func count<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int

    /// Whether any row of the model's table matches `filter` (`SELECT EXISTS (...)`).
    func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Bool

    /// Deletes every row of the model's table that matches `filter` with one `DELETE` (Core Data's
    /// `NSBatchDeleteRequest`); the foreign keys' delete rules apply. Returns how many rows went.
    @discardableResult
    func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int

    /// Inserts or updates the models (and every entity their `toEntity` registered), one statement
    /// per table, then replaces the join-table sets they assigned, in one transaction when that takes
    /// more than one statement.
    @discardableResult
    func update<Model: EntityConvertible>(entities: [Model], options: UpsertOptions) async throws -> UpsertResult

    /// Deletes the rows of the models, by unique key, with one statement. Returns how many went.
    @discardableResult
    func delete<Model: EntityConvertible>(entities: [Model]) async throws -> Int
}

extension CoreDataServiceProtocol {
    /// The models matching `filter`; the type is inferred from the result.
    public func fetch<Model: EntityConvertible>(
        where filter: Filter? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil, offset: Int? = nil,
        loading: Loading = .default
    ) async throws -> [Model] {
        try await fetch(Model.self, where: filter, sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// All models of a type, or those matching `filter`, with their relationships (``Loading/default``).
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil,
        offset: Int? = nil, loading: Loading = .default
    ) async throws -> [Model] {
        try await fetch(type, where: filter, sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// The models matching an NSPredicate format string, as ported code writes it.
    ///
    /// ```swift
    /// let reviews = try await service.fetch(ReviewModel.self, where: "bookId == %@", book.uuid,
    ///                                       sortedBy: [.descending("createdAt")], limit: 50)
    /// ```
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where format: String, _ arguments: (any Encodable & Sendable)?...,
        sortedBy sort: [SortKey] = [], limit: Int? = nil, offset: Int? = nil, loading: Loading = .default
    ) async throws -> [Model] {
        let filter = try Filter(format: format, arguments: arguments)
        return try await fetch(type, where: filter, sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// How many rows match an NSPredicate format string.
    public func count<Model: EntityConvertible>(
        _ type: Model.Type, where format: String, _ arguments: (any Encodable & Sendable)?...
    ) async throws -> Int {
        try await count(type, where: try Filter(format: format, arguments: arguments))
    }

    /// Whether any row matches an NSPredicate format string.
    public func exists<Model: EntityConvertible>(
        _ type: Model.Type, where format: String, _ arguments: (any Encodable & Sendable)?...
    ) async throws -> Bool {
        try await exists(type, where: try Filter(format: format, arguments: arguments))
    }

    /// Whether the model's table has any row.
    public func exists<Model: EntityConvertible>(_ type: Model.Type) async throws -> Bool {
        try await exists(type, where: nil)
    }

    /// Deletes the rows matching an NSPredicate format string with one `DELETE`.
    @discardableResult
    public func deleteAll<Model: EntityConvertible>(
        _ type: Model.Type, where format: String, _ arguments: (any Encodable & Sendable)?...
    ) async throws -> Int {
        try await deleteAll(type, where: try Filter(format: format, arguments: arguments))
    }

    /// How many rows of the model's table there are.
    public func count<Model: EntityConvertible>(_ type: Model.Type) async throws -> Int {
        try await count(type, where: nil)
    }

    /// Upserts the models (``UpsertOptions/upsert``).
    @discardableResult
    public func update<Model: EntityConvertible>(entities: [Model]) async throws -> UpsertResult {
        try await update(entities: entities, options: .upsert)
    }
}

/// Typed filters on the entity's key paths.
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

    /// Whether any row matches a typed filter.
    public func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>) async throws -> Bool {
        try await exists(type, where: filter.filter)
    }

    /// Deletes the rows matching a typed filter with one `DELETE`.
    @discardableResult
    public func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>) async throws -> Int {
        try await deleteAll(type, where: filter.filter)
    }
}
