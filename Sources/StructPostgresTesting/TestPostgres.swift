import Foundation
import Logging
import StructPostgres

/// The PostgreSQL server that tests use, and a fresh database per test.
///
/// Uses `DATABASE_URL` when set (docker compose, a developer's own server; the user must be allowed
/// to create databases); otherwise starts one ``LocalPostgresCluster`` per test process.
///
/// With `STRUCTPG_TEST_POOLER=pgbouncer`, the services and URLs of ``withDatabase(pool:configure:_:)`` and
/// ``TestDatabase`` go through a ``LocalPgBouncer`` in transaction mode in front of that cluster (databases are
/// still created and dropped directly): the same tests then run through the pooler.
///
/// ```swift
/// struct Book: StoredModel {
///     static let table = "books"
///     var uuid: UUID
///     var title: String
/// }
///
/// @Test func storesBooks() async throws {
///     try await TestPostgres.withDatabase { service in
///         try await service.execute(unsafeSQL: "CREATE TABLE books (uuid uuid PRIMARY KEY, title text)")
///         try await service.update(entities: [Book(uuid: UUID(), title: "Dune")])
///         let count = try await service.count(Book.self)
///         #expect(count == 1)
///     }
/// }
/// ```
public enum TestPostgres {
    /// Settings of a user that may create databases, on its maintenance database.
    public static func adminSettings() async throws -> ConnectionSettings {
        try await SharedServer.instance.settings()
    }

    /// The local cluster's socket directory, or `nil` when the tests use `DATABASE_URL`.
    public static func localSocketDirectory() async throws -> String? {
        try await localCluster()?.socketDirectory
    }

    /// The PgBouncer the tests go through (`STRUCTPG_TEST_POOLER=pgbouncer`), or `nil`.
    public static func pooler() async throws -> LocalPgBouncer? {
        try await SharedServer.instance.pooler()
    }

    /// The throwaway cluster the tests use, or `nil` when they use `DATABASE_URL`.
    public static func localCluster() async throws -> LocalPostgresCluster? {
        try await SharedServer.instance.localCluster()
    }

    /// Creates an empty database, runs `body` with a service connected to it, then drops the database,
    /// also when `body` throws.
    public static func withDatabase<T>(
        pool: PoolOptions = PoolOptions(maxConnections: 4),
        configure: (inout PostgresService.Configuration) -> Void = { _ in },
        _ body: (PostgresService) async throws -> T
    ) async throws -> T {
        let database = try await TestDatabase.create(connections: pool.maxConnections + 2)
        var configuration = PostgresService.Configuration(connection: database.settings, pool: pool)
        if database.settings.poolMode == .transaction {
            // Observers listen on a session of their own, as behind a real pooler.
            var direct = database.admin
            direct.database = database.settings.database
            configuration.listenerConnection = direct
        }
        configure(&configuration)
        do {
            let result = try await PostgresService.withService(configuration: configuration, body)
            try await database.drop()
            return result
        } catch {
            // In a task of its own, so that the drop also happens when this task was cancelled.
            try? await Task { try await database.drop() }.value
            throw error
        }
    }

    /// Applies the migrations in `migrations` to an empty database and verifies `models` against the schema they
    /// make: throws ``StructPostgresError/Code-swift.struct/schemaMismatch`` listing every mismatch. One line in a
    /// test keeps models and migrations in step.
    ///
    /// ```swift
    /// @Test func modelsMatchTheMigrations() async throws {
    ///     try await TestPostgres.assertSchemaMatches(models: [BookModel.self, ReviewModel.self])
    /// }
    /// ```
    public static func assertSchemaMatches(
        models: [any EntityConvertible.Type], migrations: URL = URL(fileURLWithPath: "migrations")
    ) async throws {
        try await withDatabase { service in
            try await Migrator(service: service, migrations: try MigrationSet(directory: migrations)).migrate()
            try await service.verifySchema(of: models)
        }
    }
}

/// One database created for a test; drop it when done.
public struct TestDatabase: Sendable {
    /// Settings that connect to this database.
    public private(set) var settings: ConnectionSettings
    let admin: ConnectionSettings
    /// This database's share of the server's connections, given back once.
    let connections: ConnectionBudget.Share

    /// Creates an empty database named `test_<random>` on the test server, once `connections` of the server's
    /// connections are free for it (see ``drop()``): tests run in parallel queue here rather than exceed the server's
    /// `max_connections`.
    public static func create(connections: Int = 6) async throws -> TestDatabase {
        let admin = try await TestPostgres.adminSettings()
        let held = try await ConnectionBudget.shared.take(connections, admin: admin, adminPool: AdminConnections.limit)
        do {
            let name = "test_" + UUID().uuidString.prefix(13).replacingOccurrences(of: "-", with: "").lowercased()
            try await AdminConnections.shared.run(on: admin) {
                try await $0.execute(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE template0")
            }
            var settings = try await TestPostgres.pooler()?.settings ?? admin
            settings.database = name
            return TestDatabase(settings: settings, admin: admin, connections: ConnectionBudget.Share(held))
        } catch {
            await ConnectionBudget.shared.giveBack(held)
            throw error
        }
    }

    /// A `postgres://` URL of this database, password included, for handing to a subprocess
    /// (e.g. as `DATABASE_URL`). Do not log it.
    public var url: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = settings.user
        components.password = settings.password
        components.host = settings.usesUnixSocket ? nil : settings.host
        components.port = settings.port
        components.path = "/" + settings.database
        var query = [URLQueryItem(name: "sslmode", value: settings.sslMode.rawValue)]
        if settings.usesUnixSocket { query.append(URLQueryItem(name: "host", value: settings.host)) }
        if settings.poolMode != .session { query.append(URLQueryItem(name: "pool_mode", value: settings.poolMode.rawValue)) }
        components.queryItems = query
        return components.string!
    }

    /// The URL of this database on the server itself, not through the test pooler (for `LISTEN`).
    public var directURL: String {
        var direct = self
        direct.settings = admin
        direct.settings.database = settings.database
        return direct.url
    }

    /// Drops the database, closing any connection still open to it, and gives its connections back to the budget.
    public func drop() async throws {
        try await AdminConnections.shared.run(on: admin) {
            try await $0.execute(unsafeSQL: "DROP DATABASE IF EXISTS \(settings.database) WITH (FORCE)")
        }
        if connections.release() { await ConnectionBudget.shared.giveBack(connections.count) }
    }
}

/// Starts the local cluster once per process, on first use.
actor SharedServer {
    static let instance = SharedServer()
    private var cached: ConnectionSettings?
    private var cluster: LocalPostgresCluster?

    func settings() throws -> ConnectionSettings {
        if let cached { return cached }
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["DATABASE_URL"], !url.isEmpty {
            cached = try ConnectionSettings(url: url, environment: environment)
        } else {
            let cluster = try LocalPostgresCluster.start()
            self.cluster = cluster
            SharedServer.stopAtExit(cluster)
            cached = cluster.settings
        }
        return cached!
    }

    func localCluster() throws -> LocalPostgresCluster? {
        _ = try settings()
        return cluster
    }

    private var bouncer: LocalPgBouncer??

    func pooler() throws -> LocalPgBouncer? {
        if let bouncer { return bouncer }
        guard ProcessInfo.processInfo.environment["STRUCTPG_TEST_POOLER"] == "pgbouncer" else {
            bouncer = .some(nil)
            return nil
        }
        guard let cluster = try localCluster() else {
            throw TestDatabaseError("STRUCTPG_TEST_POOLER=pgbouncer starts a PgBouncer in front of the local cluster; unset DATABASE_URL")
        }
        let started = try LocalPgBouncer.start(in: cluster, poolSize: 3)
        bouncer = .some(started)
        ClusterRegistry.bouncers.withLock { $0.append(started) }
        return started
    }

    private static func stopAtExit(_ cluster: LocalPostgresCluster) {
        ClusterRegistry.started.withLock { $0.append(cluster) }
        atexit { ClusterRegistry.stopAll() }
    }
}

import Synchronization

enum ClusterRegistry {
    static let started = Mutex<[LocalPostgresCluster]>([])
    static let bouncers = Mutex<[LocalPgBouncer]>([])
    static func stopAll() {
        for bouncer in bouncers.withLock({ $0 }) { bouncer.stop() }
        let clusters = started.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for cluster in clusters { cluster.stop() }
    }
}
