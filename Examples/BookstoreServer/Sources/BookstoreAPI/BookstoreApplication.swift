import Foundation
import Hummingbird
import Logging
import StructPostgres

/// Where the server listens and where its migrations are, from the environment.
public struct ServerSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// The repository's `migrations/`, applied at start-up.
    public var migrations: URL
    /// Write ``ExampleData`` after the migrations (`SEED_EXAMPLE=1`).
    public var seedsExample = false

    public init(host: String = "127.0.0.1", port: Int = 8080, migrations: URL = ServerSettings.repositoryMigrations) {
        self.host = host
        self.port = port
        self.migrations = migrations
    }

    /// `HOST`, `PORT`, `MIGRATIONS_DIR` and `SEED_EXAMPLE`, each optional.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Self {
        var settings = ServerSettings()
        if let host = environment["HOST"] { settings.host = host }
        if let port = environment["PORT"] {
            guard let number = Int(port), (0...65535).contains(number) else { throw ServerError("PORT '\(port)' is not a port number") }
            settings.port = number
        }
        if let directory = environment["MIGRATIONS_DIR"] { settings.migrations = URL(fileURLWithPath: directory) }
        settings.seedsExample = environment["SEED_EXAMPLE"] == "1"
        return settings
    }

    /// `migrations/` at the root of the repository this package sits in.
    public static let repositoryMigrations = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../../../migrations").standardized
}

/// A configuration mistake, said plainly.
public struct ServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The web service: the routes on a ``PostgresService`` that runs next to the HTTP server in the application's
/// `ServiceGroup`. Migrations are applied before the server accepts requests; on SIGTERM or SIGINT the server stops
/// accepting, finishes the requests in flight, then the pool closes.
///
/// ```swift
/// let service = try PostgresService(configuration: .fromEnvironment())
/// try await buildApplication(service: service, settings: .fromEnvironment()).runService()
/// ```
public func buildApplication(
    service: PostgresService, settings: ServerSettings, logger: Logger = Logger(label: "bookstore-server"),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router(context: BasicRequestContext.self)
    router.add(middleware: LogRequestsMiddleware(.info))
    router.add(middleware: DatabaseErrorMiddleware())
    BookstoreRoutes(service: service).add(to: router)
    var app = Application(
        router: router,
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "bookstore"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? settings.port) },
        logger: logger)
    app.addServices(service)
    let (migrations, seeds) = (settings.migrations, settings.seedsExample)
    app.beforeServerStarts {
        let run = try await Migrator(service: service, migrations: try MigrationSet(directory: migrations)).migrate()
        logger.info("migrations applied", metadata: ["count": "\(run.steps.count)"])
        if seeds { try await ExampleData.write(service) }
    }
    return app
}
