import Logging
import PostgresNIO
import ServiceLifecycle
import StructPostgresCore
import StructPostgresDriver

/// The entry point: a pool of connections to one database and the ``CoreDataServiceProtocol`` on it.
///
/// Run it as a `ServiceLifecycle` service, next to your server:
/// ```swift
/// let service = try PostgresService(configuration: .fromEnvironment())
/// let group = ServiceGroup(services: [service, server], logger: logger)
/// try await group.run()
/// ```
/// or around a closure, which starts the pool and stops it afterwards:
/// ```swift
/// try await PostgresService.withService(configuration: .init(url: "postgres://app@localhost/shop")) { db in
///     try await db.update(entities: books)
///     let cheap: [BookModel] = try await db.fetch(where: .equal("publisher", "Apress"), sortedBy: [.ascending("price")])
/// }
/// ```
/// Every operation is one of ``PostgresAccess``, shared with ``PostgresTransaction``.
public final class PostgresService: OperationPathOwner, Service {
    /// Everything the service needs (see ``PostgresConfiguration``).
    public typealias Configuration = PostgresConfiguration

    /// The configuration the service was created with.
    public let configuration: Configuration
    let runtime: ServiceRuntime
    let path: OperationPath
    /// The observations running, shared by query.
    let observations = ObservationRegistry()

    /// Creates the service; no connection is opened until ``run()`` runs and a call needs one.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        runtime = try ServiceRuntime(configuration: configuration)
        path = OperationPath(runtime: runtime, transaction: nil)
    }

    /// Runs the connection pool until the task is cancelled or graceful shutdown is triggered, and with it every
    /// task of the service: the listening connection of observations, coalesced batches, a stream's held
    /// connection. When it returns, none of them is left running and no connection is open: an observation's
    /// sequence has ended, and a call still waiting has failed with a named error.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.runtime.background.run() }
            await runtime.router.run()
            await runtime.listener.stop()
            runtime.background.finish()
        }
    }

    /// Starts a service, runs `body` with it, and stops it, also when `body` throws.
    public static func withService<T>(
        configuration: Configuration, _ body: (PostgresService) async throws -> T
    ) async throws -> T {
        let service = try PostgresService(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            defer { group.cancelAll() }
            await service.runtime.router.waitUntilStarted()
            return try await body(service)
        }
    }

    /// How many pooled connections calls are using right now (connections kept idle between calls do not count).
    public var connectionsInUse: Int { runtime.router.connectionsInUse }

    /// Every operation of the service on the primary, also reads when there are replicas: for a read that must
    /// see the caller's own writes.
    ///
    /// ```swift
    /// try await service.update(entities: [review])
    /// let mine = try await service.primary.fetch(ReviewModel.self, where: .equal("uuid", review.uuid))
    /// ```
    public var primary: PrimaryAccess { PrimaryAccess(path: path.onPrimaryOnly()) }

    /// Runs `body` in one transaction: it commits when `body` returns and rolls back when it throws.
    ///
    /// A serialization failure (40001) or deadlock (40P01) rolls back and runs `body` again, at most
    /// ``TransactionOptions/maxRetries`` times, so `body` must be safe to repeat. The value handed to
    /// `body` is not the pool: every call on it runs inside the transaction, and it refuses work once
    /// the transaction has ended.
    ///
    /// ```swift
    /// try await service.transaction(.init(isolation: .serializable)) { tx in
    ///     guard var book = try await tx.fetchOne(BookModel.self, where: .equal("uuid", id)) else { return }
    ///     book.price = (book.price ?? 0) * 0.9
    ///     try await tx.update(entities: [book])
    /// }
    /// ```
    @discardableResult
    public func transaction<T>(
        _ options: TransactionOptions = .init(), _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await path.transaction(options) { try await body(PostgresTransaction(path.path(inside: $0))) }
    }

    /// Runs `body` in a transaction with the given isolation level and access mode.
    @discardableResult
    public func transaction<T>(
        isolation: TransactionOptions.Isolation?, readOnly: Bool = false,
        _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await transaction(TransactionOptions(isolation: isolation, readOnly: readOnly), body)
    }

    /// Leases a connection for `body`; the connection must not escape it.
    ///
    /// The connection is PostgresNIO's own, without the library's guards. Two faults of PostgresNIO 1.33.2 then
    /// reach you:
    /// - A connection lost while you iterate a query's rows (`for try await row in try await connection.query(...)`)
    ///   stops the process (a trap in PostgresNIO's `RowStreamStateMachine`). Take all rows at once (the
    ///   future-returning form below), or read through the service (``query(_:)``, `fetch`, `stream`).
    /// - A statement outside a transaction is reported done before PostgreSQL has committed it: an error of the
    ///   commit (a deferred constraint, a synchronous standby lost) is dropped. Write through the service, or
    ///   between your own `BEGIN` and `COMMIT`.
    ///
    /// ```swift
    /// let rows = try await service.withConnection { connection in
    ///     try await connection.query("SELECT uuid FROM books", logger: logger).get().rows
    /// }
    /// ```
    public func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await runtime.router.primary().withConnection(body)
    }

    /// Forgets the table layouts read from the catalog, after the schema changed under a running service.
    public func forgetSchemaCache() { runtime.forgetSchemas() }
}

/// The operations of a ``PostgresService`` with reads pinned to the primary (``PostgresService/primary``).
public struct PrimaryAccess: OperationPathOwner {
    let path: OperationPath
}
