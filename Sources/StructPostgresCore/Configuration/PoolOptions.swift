/// How the connection pool behaves.
public struct PoolOptions: Sendable, Equatable {
    /// Connections opened at most (PostgreSQL's own `max_connections` is shared by every client).
    public var maxConnections: Int = 20
    /// Connections kept open even when idle.
    public var minConnections: Int = 0
    /// How long opening one connection may take.
    public var connectTimeout: Duration = .seconds(10)
    /// An idle connection above ``minConnections`` is closed after this long.
    public var idleTimeout: Duration = .seconds(60)
    /// How long a caller waits for a free connection before ``StructPostgresError/Code-swift.struct/poolTimeout``.
    /// No call waits longer, also when the server goes away while it waits.
    public var acquireTimeout: Duration = .seconds(30)
    /// How long the service keeps a connection leased between its calls, so that the next call takes it
    /// without a round through the pool (see the *Performance* article); `.zero` leases from the pool every
    /// call. A kept connection goes back to the pool at once when a caller waits there.
    public var keepIdleConnectionsFor: Duration = .seconds(1)
    /// How long a call may take with a pooled connection, waiting for it included, before it fails with
    /// ``StructPostgresError/Code-swift.struct/deadlineExceeded`` and its connection is closed; `nil` (the default):
    /// unbounded, since dead links are found by ``ConnectionSettings/tcpKeepalive`` and
    /// ``ConnectionSettings/tcpUserTimeout`` and a long statement may be meant. A call's own deadline
    /// (``PostgresService/withTimeout(_:_:)``) applies when it is earlier. Must be positive.
    public var callTimeout: Duration?

    /// Options with the given limits and timeouts; each defaults to its property's default.
    public init(
        maxConnections: Int = 20, minConnections: Int = 0, connectTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(60), acquireTimeout: Duration = .seconds(30),
        keepIdleConnectionsFor: Duration = .seconds(1)
    ) {
        self.maxConnections = maxConnections
        self.minConnections = minConnections
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.acquireTimeout = acquireTimeout
        self.keepIdleConnectionsFor = keepIdleConnectionsFor
    }
}
