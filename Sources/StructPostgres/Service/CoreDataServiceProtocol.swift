import StructPostgresCore
import StructPostgresDriver

/// The service of the StructCoreData pattern, async and on PostgreSQL: fetch, update (upsert),
/// delete and count of struct models. ``PostgresService`` and ``PostgresTransaction`` implement it.
///
/// ```swift
/// func reviews(of book: BookModel, in store: some CoreDataServiceProtocol) async throws -> [ReviewModel] {
///     try await store.fetch(ReviewModel.self, where: \.bookID == book.uuid,
///                           sortedBy: [.ascending("createdAt")], limit: 50)
/// }
/// ```
///
/// Every verb that filters takes one ``EntityFilter``, in whichever spelling suits: key paths (`\.price < 10`),
/// keys by name (`.equal("title", title)`), a format string (`.format("price < %@", 10)`), or Swift's
/// `#Predicate` (`.predicate(#Predicate { $0.price < 10 })`).
public protocol CoreDataServiceProtocol: Sendable {
    /// The models whose rows match `filter`, in the order of `sortedBy`, at most `limit` of them,
    /// with the relationships `loading` names loaded (one query per relationship per level).
    func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>?, sortedBy sort: [SortKey], limit: Int?, offset: Int?, loading: Loading
    ) async throws -> [Model]

    /// How many rows of the model's table match `filter`.
    func count<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>?) async throws -> Int

    /// Whether any row of the model's table matches `filter` (`SELECT EXISTS (...)`).
    func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>?) async throws -> Bool

    /// Deletes every row of the model's table that matches `filter` with one `DELETE` (Core Data's
    /// `NSBatchDeleteRequest`); the foreign keys' delete rules apply. Returns how many rows went.
    @discardableResult
    func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>?) async throws -> Int

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
    /// The models matching `filter` (every one without it), in the order of `sortedBy`, at most `limit` of them
    /// after skipping `offset`, with the relationships `loading` names (``Loading/default``: every one).
    ///
    /// ```swift
    /// let reviews = try await service.fetch(ReviewModel.self, where: \.bookID == book.uuid,
    ///                                       sortedBy: [.descending("createdAt")], limit: 50)
    /// ```
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil,
        offset: Int? = nil, loading: Loading = .default
    ) async throws -> [Model] {
        try await fetch(type, where: filter, sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// The models matching `filter`, their type inferred from the result.
    ///
    /// ```swift
    /// let books: [BookModel] = try await service.fetch(where: .equal("publisher", "Apress"))
    /// ```
    public func fetch<Model: EntityConvertible>(
        where filter: EntityFilter<Model.Entity>? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil, offset: Int? = nil,
        loading: Loading = .default
    ) async throws -> [Model] {
        try await fetch(Model.self, where: filter, sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// How many rows of the model's table match `filter` (every row without it).
    public func count<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil) async throws -> Int {
        try await count(type, where: filter)
    }

    /// Whether any row of the model's table matches `filter` (any row at all without it).
    public func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil) async throws -> Bool {
        try await exists(type, where: filter)
    }

    /// Upserts the models (``UpsertOptions/upsert``).
    @discardableResult
    public func update<Model: EntityConvertible>(entities: [Model]) async throws -> UpsertResult {
        try await update(entities: entities, options: .upsert)
    }
}
