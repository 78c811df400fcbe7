import Logging
import PostgresNIO
import ServiceLifecycle

/// The entry point: a pool of connections to one database and the ``CoreDataServiceProtocol`` on it.
///
/// Run it as a `ServiceLifecycle` service, next to your server:
/// ```swift
/// let service = try PostgresService(configuration: .fromEnvironment())
/// let group = ServiceGroup(services: [service, app], logger: logger)
/// try await group.run()
/// ```
/// or around a closure, which starts the pool and stops it afterwards:
/// ```swift
/// try await PostgresService.withService(configuration: .init(url: "postgres://app@localhost/shop")) { db in
///     try await db.update(entities: books)
///     let cheap: [BookModel] = try await db.fetch(where: .equal("publisher", "Apress"), sortedBy: [.ascending("price")])
/// }
/// ```
public final class PostgresService: CoreDataServiceProtocol, Service {
    public let configuration: Configuration
    let runtime: ServiceRuntime

    /// Creates the service; no connection is opened until ``run()`` runs and a call needs one.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        let client = PostgresClient(
            configuration: try configuration.connection.clientConfiguration(pool: configuration.pool),
            backgroundLogger: configuration.logger)
        self.runtime = ServiceRuntime(configuration: configuration, client: client)
    }

    /// Runs the connection pool until the task is cancelled or graceful shutdown is triggered, and the tasks
    /// that keep connections leased between calls (a call then takes one without a round through the pool).
    public func run() async throws {
        await runtime.run()
    }

    /// Starts a service, runs `body` with it, and stops it, also when `body` throws.
    public static func withService<T>(
        configuration: Configuration, _ body: (PostgresService) async throws -> T
    ) async throws -> T {
        let service = try PostgresService(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            defer { group.cancelAll() }
            await service.runtime.keeper.started.wait()
            return try await body(service)
        }
    }

    /// How many pooled connections calls are using right now (connections kept idle between calls do not count).
    public var connectionsInUse: Int { runtime.connectionsInUse }

    // MARK: CoreDataServiceProtocol

    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter?, sortedBy sort: [SortKey], limit: Int?, offset: Int?, loading: Loading
    ) async throws -> [Model] {
        try await withSession {
            try await EntityOperations.fetch($0, FetchRequest(filter: filter, sort: sort, limit: limit, offset: offset), loading)
        }
    }

    public func count<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int {
        try await withSession { try await $0.count(Model.Entity.self, filter: filter) }
    }

    public func exists<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Bool {
        try await withSession { try await $0.exists(Model.Entity.self, filter: filter) }
    }

    @discardableResult
    public func deleteAll<Model: EntityConvertible>(_ type: Model.Type, where filter: Filter?) async throws -> Int {
        try await withSession { try await $0.deleteAll(Model.Entity.self, filter: filter) }
    }

    @discardableResult
    public func update<Model: EntityConvertible>(entities: [Model], options: UpsertOptions) async throws -> UpsertResult {
        if entities.count > DatabaseSession.rowsPerStatement {
            return try await transaction { try await EntityOperations.writeInSlices(entities, in: $0.session, options: options) }
        }
        let work = try EntityOperations.unitOfWork(entities[...], inParallel: true)
        guard !work.isEmpty else { return UpsertResult() }
        if work.statementCount == 1 {
            return try await withSession { try await EntityOperations.write(work, in: $0, options: options) }
        }
        return try await transaction { try await EntityOperations.write(work, in: $0.session, options: options) }
    }

    @discardableResult
    public func delete<Model: EntityConvertible>(entities: [Model]) async throws -> Int {
        try await withSession { try await EntityOperations.delete(entities, in: $0) }
    }

    /// The models matching `filter`, one at a time as their rows arrive, with flat memory: for results too
    /// large to hold. Relationships are not loaded.
    ///
    /// ```swift
    /// for try await book in service.stream(BookModel.self, sortedBy: [.ascending("title")]) { index(book) }
    /// ```
    public func stream<Model: EntityConvertible>(
        _ type: Model.Type, where filter: Filter? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil
    ) -> ModelStream<Model> {
        ModelStream(runtime: runtime, request: FetchRequest(filter: filter, sort: sort, limit: limit))
    }

    /// The models matching a typed filter, one at a time as their rows arrive.
    public func stream<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>, sortedBy sort: [SortKey] = [], limit: Int? = nil
    ) -> ModelStream<Model> {
        stream(type, where: filter.filter, sortedBy: sort, limit: limit)
    }

    // MARK: Raw SQL and maintenance

    /// Runs SQL text as it is, statement by statement: no parameters; statements end with `;`. For DDL and scripts.
    public func execute(unsafeSQL sql: String) async throws {
        try await withSession { try await $0.execute(script: sql) }
    }

    /// Leases a connection for `body`; the connection must not escape it.
    public func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await runtime.withConnection(body)
    }

    /// Forgets the table layouts read from the catalog, after the schema changed under a running service.
    public func forgetSchemaCache() { runtime.forgetSchemas() }

    func withSession<T>(_ body: (DatabaseSession) async throws -> T) async throws -> T {
        try await runtime.withConnection { connection in
            let session = DatabaseSession(connection: connection, runtime: runtime)
            do {
                return try await body(session)
            } catch let error as StructPostgresError where error.sqlState != nil {
                // A failed script may have left a transaction open on this connection; never pool it so.
                await session.rollBack()
                throw error
            }
        }
    }
}
