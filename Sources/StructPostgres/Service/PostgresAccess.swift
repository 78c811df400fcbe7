import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// What ``PostgresService`` and ``PostgresTransaction`` share: every operation, written once and sent down one
/// path, which runs it on a pooled connection (the service) or in the transaction. Write functions against it to
/// run them either way:
///
/// ```swift
/// func restock(_ books: [BookModel], in db: some PostgresAccess) async throws {
///     try await db.update(entities: books)
///     for try await book in db.stream(BookModel.self, where: .equal("publisher", "Apress")) { print(book.uuid) }
/// }
/// ```
///
/// Do not declare new conformances: ``PostgresService``, ``PostgresTransaction`` and ``PrimaryAccess`` conform, and
/// every operation runs on the library's own path to a connection, which only they hold.
public protocol PostgresAccess: CoreDataServiceProtocol {}

/// What the library's conformances of ``PostgresAccess`` hold: the path their operations take.
protocol OperationPathOwner: PostgresAccess {
    var path: OperationPath { get }
}

extension PostgresAccess {
    /// The path of this value's operations.
    var operationPath: OperationPath {
        // The service first: a cast to a final class is a comparison, a cast to a protocol a conformance lookup.
        if let service = self as? PostgresService { return service.path }
        guard let owner = self as? any OperationPathOwner else {
            preconditionFailure("\(Self.self) conforms to PostgresAccess outside StructPostgres; only the library's own types can")
        }
        return owner.path
    }
}

extension PostgresAccess {
    /// Fetches the models matching `filter` on a pooled connection (the service) or in the transaction.
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>?, sortedBy sort: [SortKey], limit: Int?, offset: Int?, loading: Loading
    ) async throws -> [Model] {
        try await operationPath.fetch(
            type, FetchRequest(filter: filter?.filter, sort: sort, limit: limit, offset: offset), loading: loading)
    }

    /// Counts the rows matching `filter` on a pooled connection (the service) or in the transaction.
    public func count<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>?) async throws -> Int {
        try await operationPath.count(Model.Entity.self, filter?.filter)
    }

    /// Whether any row matches `filter`, asked on a pooled connection (the service) or in the transaction.
    public func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>?) async throws -> Bool {
        try await operationPath.exists(Model.Entity.self, filter?.filter)
    }

    /// Deletes the rows matching `filter` on a pooled connection (the service) or in the transaction; returns how
    /// many went.
    @discardableResult
    public func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: EntityFilter<Model.Entity>?) async throws -> Int {
        try await operationPath.deleteAll(Model.Entity.self, filter?.filter)
    }

    /// Inserts or updates the models (and every entity their `toEntity` registered), one statement per table,
    /// then replaces the join-table sets they assigned; all or nothing when that takes more than one statement
    /// (a transaction of its own, or a savepoint inside a transaction).
    @discardableResult
    public func update<Model: EntityConvertible>(entities: [Model], options: UpsertOptions) async throws -> UpsertResult {
        try await operationPath.update(entities, options: options)
    }

    /// Deletes the models' rows by unique key on a pooled connection (the service) or in the transaction; returns
    /// how many went.
    @discardableResult
    public func delete<Model: EntityConvertible>(entities: [Model]) async throws -> Int {
        try await operationPath.delete(entities)
    }

    /// Deletes the models' rows by unique key, those of a model with a version (``EntityProtocol/versionKey``) as
    /// `policy` says rather than the service's ``PostgresConfiguration/mergePolicy``; returns how many went.
    ///
    /// ```swift
    /// try await service.delete(entities: [book], merging: .overwrite)   // whatever its stored version
    /// ```
    @discardableResult
    public func delete<Model: EntityConvertible>(entities: [Model], merging policy: MergePolicy) async throws -> Int {
        try await operationPath.delete(entities, policy: policy)
    }

    /// The models matching `filter`, one at a time as their rows arrive, with flat memory: for results too
    /// large to hold. Relationships are not loaded. Inside a transaction, iterate it within the closure. A filter
    /// that cannot be compiled fails the first iteration.
    ///
    /// ```swift
    /// for try await book in service.stream(BookModel.self, where: \.price < 10, sortedBy: [.ascending("title")]) {
    ///     index(book)
    /// }
    /// ```
    public func stream<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil
    ) -> ModelStream<Model> {
        operationPath.stream(type, FetchRequest(filter: filter?.filter, sort: sort, limit: limit))
    }

    /// Runs a PostgresNIO query (values interpolated into it are bound, never spliced) and returns its rows.
    ///
    /// ```swift
    /// let rows = try await service.query("SELECT title FROM books WHERE price < \(limit)")
    /// ```
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await operationPath.query(query)
    }

    /// Runs a query of yours (values interpolated into it are bound, never spliced) and decodes each row into a
    /// model, matching the result's columns to the entity's by name: for the query the API does not cover.
    /// Relationships are not loaded.
    ///
    /// ```swift
    /// let top: [BookModel] = try await service.fetch(BookModel.self, sql: """
    ///     SELECT b.* FROM books b JOIN reviews r ON r.book_id = b.uuid
    ///     GROUP BY b.uuid HAVING count(*) >= \(10) ORDER BY count(*) DESC
    ///     """)
    /// ```
    public func fetch<Model: EntityConvertible>(_ type: Model.Type, sql query: PostgresQuery) async throws -> [Model] {
        try await operationPath.fetch(type, query: query)
    }

    /// Runs SQL text as it is, statement by statement: no parameters; statements end with `;`. For DDL and scripts.
    public func execute(unsafeSQL sql: String) async throws {
        try await operationPath.execute(unsafeSQL: sql)
    }
}
