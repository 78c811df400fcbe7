import StructPostgres
import Vapor

extension Application {
    /// StructPostgres in this app: ``StructPostgresSupport/use(_:)`` in `configure(_:)`, then
    /// ``StructPostgresSupport/service`` (or `req.store` in a route).
    ///
    /// ```swift
    /// public func configure(_ app: Application) async throws {
    ///     try app.structPostgres.use(.init(connection: try .fromEnvironment(), logger: app.logger))
    ///     try await app.structPostgres.migrate(MigrationSet(directory: URL(fileURLWithPath: "migrations")))
    ///     try routes(app)
    /// }
    /// ```
    public var structPostgres: StructPostgresSupport { StructPostgresSupport(application: self) }
}

extension Request {
    /// The app's ``PostgresService``, as Fluent's `req.db` is its database.
    ///
    /// ```swift
    /// app.get("books") { req in try await req.store.fetch(BookModel.self, sortedBy: [.ascending("title")]) }
    /// ```
    public var store: PostgresService { application.structPostgres.service }
}

/// The app's ``PostgresService``, run by the app's lifecycle: started when the app boots, stopped when it shuts
/// down, after live responses have ended and the HTTP server has finished the requests in flight.
public struct StructPostgresSupport: Sendable {
    /// The app it belongs to.
    public let application: Application

    struct Key: StorageKey {
        typealias Value = StructPostgresLifecycle
    }

    /// Creates the service from `configuration` and has the app's lifecycle run it. Call it once, in `configure(_:)`.
    public func use(_ configuration: PostgresService.Configuration) throws {
        precondition(application.storage[Key.self] == nil, "app.structPostgres.use(_:) was called twice")
        let lifecycle = StructPostgresLifecycle(service: try PostgresService(configuration: configuration))
        application.storage[Key.self] = lifecycle
        application.lifecycle.use(lifecycle)
    }

    /// The service ``use(_:)`` created.
    public var service: PostgresService { lifecycle.service }

    /// Applies `migrations` on a service of its own, before the app boots (as Fluent's `autoMigrate()` in
    /// `configure(_:)`): a database that cannot be reached or refuses a migration stops the app before it serves.
    @discardableResult
    public func migrate(_ migrations: MigrationSet) async throws -> MigrationRun {
        try await PostgresService.withService(configuration: service.configuration) { service in
            try await Migrator(service: service, migrations: migrations).migrate()
        }
    }

    /// Runs `body`; when the app starts shutting down, cancels it and returns `nil`. A response that runs until its
    /// client leaves (server-sent events, a WebSocket) goes through here, so that no client holds the shutdown up.
    public func cancelWhenShuttingDown<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await lifecycle.shutdown.cancelWhenTriggered(body)
    }

    var lifecycle: StructPostgresLifecycle {
        guard let lifecycle = application.storage[Key.self] else {
            fatalError("StructPostgres is not configured: call app.structPostgres.use(_:) in configure(_:)")
        }
        return lifecycle
    }
}
