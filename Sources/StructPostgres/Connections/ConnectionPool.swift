import CoreMetrics
import Logging
import PostgresNIO
import Synchronization

/// The connections layer: PostgresNIO's `PostgresClient`, the connections kept leased between calls, and what
/// stops a cancelled statement. Every connection a call uses is leased here (``withConnection(_:)``).
final class ConnectionPool: Sendable {
    let client: PostgresClient
    let settings: ConnectionSettings
    let options: PoolOptions
    let logger: Logger
    let leases = Mutex(LeaseBook())
    let keeper: ConnectionKeeper
    let canceller: StatementCanceller
    let telemetry: Telemetry
    /// One of several hosts or a replica: with no connection open, a caller that would wait for one first checks
    /// that the host accepts connections, so that a host that is down fails the call at once (and the router
    /// goes elsewhere) instead of after ``PoolOptions/acquireTimeout``.
    let failsFast: Bool

    init(settings: ConnectionSettings, options: PoolOptions, logger: Logger, telemetry: Telemetry, failsFast: Bool = false) throws {
        self.telemetry = telemetry
        self.failsFast = failsFast
        self.settings = settings
        self.options = options
        self.logger = logger
        client = PostgresClient(configuration: try settings.clientConfiguration(pool: options), backgroundLogger: logger)
        keeper = ConnectionKeeper(idleLimit: options.keepIdleConnectionsFor)
        canceller = StatementCanceller(settings: settings, connectTimeout: settings.connectTimeout ?? options.connectTimeout, logger: logger)
    }

    /// The host and port this pool connects to.
    var endpoint: Endpoint { Endpoint(host: settings.host, port: settings.port) }

    /// For a pool that ``failsFast``: throws when no connection is open and the host refuses a new one.
    func checkReachable() async throws {
        guard failsFast, leases.withLock({ $0.open.isEmpty }) else { return }
        try await diagnoseConnection()
    }

    /// How long opening one connection may take.
    var connectTimeout: Duration { settings.connectTimeout ?? options.connectTimeout }

    /// How many pooled connections calls are using (kept idle ones do not count).
    var connectionsInUse: Int { leases.withLock { $0.inUse } }

    /// Reports the pool's use to `metrics`, the metrics backend, when there is one.
    func reportUsage(to metrics: (any MetricsFactory)?) {
        guard let metrics else { return }
        let (inUse, open, waiting) = leases.withLock { ($0.inUse, $0.open.count, $0.waiting) }
        telemetry.recordPool(inUse: inUse, idle: max(0, open - inUse), waiting: waiting, max: options.maxConnections, metrics)
    }

    /// A connection of its own, outside the pool, closed after `body`: for work that changes session state
    /// or must not wait for the pool (the migrator).
    func withDedicatedConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await settings.connect(timeout: connectTimeout, logger: logger)
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// Which pooled connections are known to be open, how many are in use or being waited for, and which are
/// kept idle for the next call (see ``ConnectionKeeper``).
struct LeaseBook {
    var open: Set<PostgresConnection.ID> = []
    var inUse = 0
    var waiting = 0
    /// Kept connections no call is using, the most recently used last.
    var kept: [IdleConnection] = []
    /// Whether a connection has ever opened: until then, a call still waiting after `refusalGrace` asks the server
    /// itself, so that a server turning this client away fails the call at once (see `refusal()`).
    var everOpened = false
    /// Whether a call is asking the server itself (one at a time).
    var askingServer = false

    /// Whether a connection known to be open is idle in the pool and not promised to a waiting lease.
    var hasIdleConnection: Bool { open.count > inUse + waiting + kept.count }
}
