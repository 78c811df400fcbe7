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
    /// The models whose rows match `filter`, in the order of `sortedBy`, at most `limit` of them.
    func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter?, sortedBy sort: [SortKey], limit: Int?
    ) async throws -> [Model]

    /// How many rows of the model's table match `filter`.
    func count<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int

    /// Inserts or updates the models (and every entity their `toEntity` registered), one statement
    /// per table, in one transaction when several tables are involved.
    @discardableResult
    func update<Model: EntityConvertible>(entities: [Model], options: UpsertOptions) async throws -> UpsertResult

    /// Deletes the rows of the models, by unique key, with one statement. Returns how many went.
    @discardableResult
    func delete<Model: EntityConvertible>(entities: [Model]) async throws -> Int
}

extension CoreDataServiceProtocol {
    /// The models matching `filter`; the type is inferred from the result.
    public func fetch<Model: EntityConvertible>(
        where filter: Filter? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil
    ) async throws -> [Model] {
        try await fetch(Model.self, where: filter, sortedBy: sort, limit: limit)
    }

    /// All models of a type, or those matching `filter`.
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter? = nil, sortedBy sort: [SortKey] = []
    ) async throws -> [Model] {
        try await fetch(type, where: filter, sortedBy: sort, limit: nil)
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

/// The operations both the pool-backed service and a transaction run on a session.
enum EntityOperations {
    static func fetch<Model: EntityConvertible>(
        _ session: DatabaseSession, _ request: FetchRequest
    ) async throws -> [Model] {
        let entities = try await session.fetch(Model.Entity.self, request)
        return try entities.map { try $0.toModel() }
    }

    /// Converts the models into a unit of work; the batches are in foreign-key order.
    static func unitOfWork<Model: EntityConvertible>(_ models: [Model]) throws -> [any EntityBatch] {
        let context = EntityContext()
        for model in models { try context.insert(model) }
        return context.registeredBatches
    }

    static func write(_ batches: [any EntityBatch], in session: DatabaseSession, options: UpsertOptions) async throws -> UpsertResult {
        var total = UpsertResult()
        for batch in batches { total = total + (try await batch.write(in: session, options: options)) }
        return total
    }

    static func delete<Model: EntityConvertible>(_ models: [Model], in session: DatabaseSession) async throws -> Int {
        let context = EntityContext()
        let entities = try models.map { try $0.toEntity(context: context) }
        return try await session.delete(entities)
    }
}
