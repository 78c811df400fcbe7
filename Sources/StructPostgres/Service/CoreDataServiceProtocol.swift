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

/// The operations both the pool-backed service and a transaction run on a session.
enum EntityOperations {
    static func fetch<Model: EntityConvertible>(
        _ session: DatabaseSession, _ request: FetchRequest, _ loading: Loading
    ) async throws -> [Model] {
        let entities = try await session.fetchGraph(Model.Entity.self, request, loading: loading)
        return try entities.map { try $0.toModel() }
    }

    /// Converts the models into a unit of work. `inParallel`: ``ParallelRows/minimum`` models or more are
    /// converted in two halves at once, as if in order (the first error is the first half's).
    static func unitOfWork<Model: EntityConvertible>(_ models: ArraySlice<Model>, inParallel: Bool) throws -> EntityContext {
        func convert(_ rows: Range<Int>) throws -> EntityContext {
            let context = EntityContext()
            for model in models[rows] { try context.insert(model) }
            return context
        }
        guard inParallel, models.count >= ParallelRows.minimum else { return try convert(models.indices) }
        let (first, second) = try ParallelRows.halves(models.indices, convert)
        first.append(second)
        return first
    }

    /// Writes `models` in slices of ``DatabaseSession/rowsPerStatement``, so that memory stays flat however
    /// many models there are; the caller runs it in a transaction. The next slice is converted and encoded
    /// while the server writes the current one. Only for models without relationships whose table has no
    /// foreign key to itself (a row could reference one in a later slice); others are one unit of work.
    static func writeInSlices<Model: EntityConvertible>(
        _ models: [Model], in session: DatabaseSession, options: UpsertOptions
    ) async throws -> UpsertResult {
        let description = try await session.describe(Model.Entity.self)
        guard Model.Entity.relationships.isEmpty, !description.schema.referencesItself else {
            return try await write(try unitOfWork(models[...], inParallel: true), in: session, options: options)
        }
        let size = DatabaseSession.rowsPerStatement
        let runtime = session.runtime
        /// A slice's upsert, or `nil` when converting its models registered other entities (written as a unit of
        /// work). Only the first slice is prepared on several threads: the others while the server writes.
        @Sendable func prepare(_ range: Range<Int>, inParallel: Bool) throws -> DatabaseSession.PreparedUpsert? {
            let context = try unitOfWork(models[range], inParallel: inParallel)
            guard context.registeredBatches.count == 1, context.registeredJoinSets.isEmpty,
                  let batch = context.registeredBatches[0] as? TypedEntityBatch<Model.Entity>
            else { return nil }
            return try DatabaseSession.prepareUpsert(
                batch.entities[...], description: description, options: options, runtime: runtime, inParallel: inParallel)
        }
        let slices = stride(from: 0, to: models.count, by: size).map { $0..<min(models.count, $0 + size) }
        return try await pipelined(
            slices.count,
            prepare: { index in { [range = slices[index]] in try prepare(range, inParallel: index == 0) } },
            send: { index, prepared in
                if let prepared { return try await session.sendUpsert(prepared, Model.Entity.self) }
                return try await write(try unitOfWork(models[slices[index]], inParallel: false), in: session, options: options)
            },
            explain: { index, error in
                var error = error
                let range = slices[index]
                error.message += " (in models \(range.lowerBound)..<\(range.upperBound) of the batch; an index above counts from \(range.lowerBound))"
                return error
            })
    }

    /// Sends `count` upserts one after another, each prepared (encoded) in a task while the one before it is
    /// sent. `prepare` gives the work to run ahead, or `nil`; `send` receives its result (`nil`: nothing was
    /// prepared). `explain` adds to an error of step `index`, whether from preparing or sending.
    static func pipelined(
        _ count: Int,
        prepare: (Int) -> (@Sendable () throws -> DatabaseSession.PreparedUpsert?)?,
        send: (Int, DatabaseSession.PreparedUpsert?) async throws -> UpsertResult,
        explain: (Int, StructPostgresError) -> StructPostgresError = { $1 }
    ) async throws -> UpsertResult {
        func start(_ index: Int) -> Task<DatabaseSession.PreparedUpsert?, any Error>? {
            guard index < count, let work = prepare(index) else { return nil }
            return Task { try work() }
        }
        var total = UpsertResult()
        var pending = start(0)
        defer { pending?.cancel() }
        for index in 0..<count {
            do {
                let prepared = try await pending?.value ?? nil
                pending = start(index + 1)
                total = total + (try await send(index, prepared))
            } catch let error as StructPostgresError {
                throw explain(index, error)
            }
        }
        return total
    }

    /// Writes the tables in foreign-key order, then the join-table sets. With several tables, each table's
    /// statement is encoded in a task while the server writes the previous table's.
    static func write(_ work: EntityContext, in session: DatabaseSession, options: UpsertOptions) async throws -> UpsertResult {
        var total = UpsertResult()
        let batches = try await foreignKeyOrder(work.registeredBatches, session)
        if batches.count == 1 {
            total = try await batches[0].write(in: session, options: options, inParallel: true)
        } else {
            var preparations: [(@Sendable () throws -> DatabaseSession.PreparedUpsert?)?] = []
            for (index, batch) in batches.enumerated() {
                preparations.append(try await batch.preparation(in: session, options: options, inParallel: index == 0))
            }
            total = try await pipelined(batches.count, prepare: { preparations[$0] }) { index, prepared in
                if let prepared { return try await batches[index].send(prepared, in: session) }
                // The next table's preparation runs meanwhile: this one takes a single thread.
                return try await batches[index].write(in: session, options: options, inParallel: false)
            }
        }
        for sets in work.registeredJoinSets {
            total = total + (try await sets.write(in: session))
        }
        return total
    }

    /// The batches with every referenced table before the tables that reference it (the catalog's foreign
    /// keys decide), otherwise in the order they were registered. Tables in a reference cycle keep that order.
    static func foreignKeyOrder(_ batches: [any EntityBatch], _ session: DatabaseSession) async throws -> [any EntityBatch] {
        guard batches.count > 1 else { return batches }
        var schemas: [TableSchema] = []
        for batch in batches { schemas.append(try await session.schema(of: batch.table, entity: batch.entityName)) }
        var remaining = Array(batches.indices)
        var ordered: [any EntityBatch] = []
        while !remaining.isEmpty {
            let waiting = Set(remaining.map { schemas[$0].oid })
            let next = remaining.first { schemas[$0].referencedTables.isDisjoint(with: waiting.subtracting([schemas[$0].oid])) }
                ?? remaining[0]
            ordered.append(batches[next])
            remaining.removeAll { $0 == next }
        }
        return ordered
    }

    static func delete<Model: EntityConvertible>(_ models: [Model], in session: DatabaseSession) async throws -> Int {
        func convert(_ rows: Range<Int>) throws -> [Model.Entity] {
            let context = EntityContext()
            return try models[rows].map { try $0.toEntity(context: context) }
        }
        guard models.count >= ParallelRows.minimum else { return try await session.delete(try convert(models.indices)) }
        let (first, second) = try ParallelRows.halves(models.indices, convert)
        return try await session.delete(first + second)
    }
}
