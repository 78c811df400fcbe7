import CoreMetrics
import Logging
import Tracing

/// Everything a ``PostgresService`` needs: where to connect, the pool, logging and retries (also named
/// `PostgresConfiguration`).
public struct PostgresConfiguration: Sendable {
    /// Where and as whom to connect: the primary, or the only server.
    public var connection: ConnectionSettings
    /// The connection pool's size and timeouts.
    public var pool: PoolOptions
    /// Receives one `debug` line per statement (SQL only, the literals of hand-written SQL masked) and errors. PostgresNIO logs through it too; below
    /// `debug` (where PostgresNIO logs each message from the server, values included) only with
    /// ``logBoundValues``.
    public var logger: Logger
    /// Log bound values and the literals of hand-written SQL (`'hunter2'`, `42`, otherwise masked as `'****'` and
    /// `?`), and keep PostgreSQL's `DETAIL` (which quotes values) in errors; let ``logger`` go down to `trace`.
    /// Spans' `db.query.text` stays masked. Off by default.
    public var logBoundValues: Bool
    /// How often a transaction failing with SQLSTATE 40001 or 40P01 is run again before its error is thrown.
    public var maxTransactionRetries: Int
    /// Called after every statement the service sends; useful for counting statements in tests.
    public var queryObserver: (@Sendable (QueryEvent) -> Void)?
    /// Prepare statements once per connection and reuse them (on by default; always off with
    /// ``ConnectionSettings/poolMode`` `.transaction`). Off, every statement is parsed and planned each time
    /// it is sent. Should a pooler refuse prepared statements anyway, the service notices (SQLSTATE 42P05 or
    /// 26000), sends them unnamed from then on, and logs one warning that names `pool_mode=transaction`.
    public var preparesStatements = true
    /// Read replicas: reads outside a transaction (fetch, count, exists, stream) go to them in turn; writes,
    /// transactions and ``PostgresService/primary`` go to ``connection``. A replica that is down, or further
    /// behind than ``maxReplicaLag``, is skipped until it recovers; with none left, reads go to the primary.
    /// A multi-host URL adds each of its hosts. See the *Deploying* article.
    public var replicas: [ConnectionSettings] = []
    /// How far behind the primary a replica may replay before reads skip it; `nil` (the default): not checked.
    public var maxReplicaLag: Duration?
    /// How often replicas that are down (and, with ``maxReplicaLag``, all replicas) are checked.
    public var replicaCheckInterval: Duration = .seconds(1)
    /// Where observers listen (`LISTEN` needs a session of its own); `nil`: ``connection``. Required with
    /// ``ConnectionSettings/poolMode`` `.transaction`: give the server's own address, not the pooler's.
    public var listenerConnection: ConnectionSettings?
    /// What a fetch that names no ``Loading`` loads (``Loading/default``): every relationship to three levels
    /// unless set. `.none` makes every plain fetch one query.
    public var defaultLoading: Loading = .threeLevels
    /// How long the listening connection of observers (``PostgresService/observe(_:where:sortedBy:limit:loading:)``)
    /// keeps trying to reconnect after it is lost before observers receive the error.
    public var listenerReconnectTimeout: Duration = .seconds(60)
    /// The tracer of the service's spans; `nil` takes `InstrumentationSystem.tracer` (what the app bootstrapped)
    /// at each operation. See the *Observability* article.
    public var tracer: (any Tracer)?
    /// Where the service's metrics go; `nil` takes `MetricsSystem.factory` (what the app bootstrapped).
    public var metricsFactory: (any MetricsFactory)?
    /// Gather concurrent single-row upserts and deletes into one statement and one commit (see ``WriteCoalescing``).
    /// On by default: a lone call is sent at once, and calls gather only while others of their kind are in flight.
    /// `nil` turns it off: then only upserts whose options say ``UpsertOptions/coalesced(_:)`` are, with the default
    /// window and batch size.
    public var coalescing: WriteCoalescing? = WriteCoalescing()
    /// Gather concurrent point reads of one shape into one statement (see ``ReadCoalescing``). On by default; `nil`
    /// turns it off.
    public var readCoalescing: ReadCoalescing? = ReadCoalescing()
    /// What writes and deletes of models with a version do with rows changed since they were read, unless a call's
    /// options say otherwise (``UpsertOptions/merging(_:)``): ``MergePolicy/error`` (the default) fails the call.
    public var mergePolicy: MergePolicy = .error
    /// Put each statement's parameterized SQL in its span's `db.query.text` (on by default; bound values never,
    /// literals of hand-written SQL masked: `'****'` for a string, `?` for a number).
    public var tracesQueryText = true
    /// The secret page cursors (``PageCursor``) are sealed with, shared by every instance of the service that must
    /// accept the others' cursors, and kept across restarts; `nil` (the default): a random key made when the service
    /// starts, so that cursors stop working when it restarts. Any length; 32 random bytes or more (as text) is enough.
    public var pageCursorSecret: String? {
        get { cursorSecret?.text }
        set { cursorSecret = newValue.map(HiddenText.init) }
    }
    /// The secret, which neither `dump` nor a debugger's reflection shows.
    private var cursorSecret: HiddenText?

    /// A configuration of `connection` and `pool`; the other properties keep their defaults unless given here.
    public init(
        connection: ConnectionSettings, pool: PoolOptions = .init(),
        logger: Logger = Logger(label: "StructPostgres"), logBoundValues: Bool = false,
        maxTransactionRetries: Int = 3, queryObserver: (@Sendable (QueryEvent) -> Void)? = nil
    ) {
        self.connection = connection
        self.pool = pool
        self.logger = logger
        self.logBoundValues = logBoundValues
        self.maxTransactionRetries = maxTransactionRetries
        self.queryObserver = queryObserver
    }

    /// A configuration from a `postgres://` URL.
    public init(url: String, pool: PoolOptions = .init()) throws {
        self.init(connection: try ConnectionSettings(url: url), pool: pool)
    }

    /// A configuration from `DATABASE_URL` or libpq's `PG*` variables.
    public static func fromEnvironment(pool: PoolOptions = .init()) throws -> PostgresConfiguration {
        Self(connection: try ConnectionSettings.fromEnvironment(), pool: pool)
    }
}

/// One statement the service sent, as seen by ``PostgresConfiguration/queryObserver``.
public struct QueryEvent: Sendable {
    /// The SQL, without bound values.
    public var sql: String
    /// How many values were bound.
    public var parameterCount: Int
    /// How long the statement took, until its last row was read.
    public var duration: Duration
    /// Whether it failed.
    public var failed: Bool

    package init(sql: String, parameterCount: Int, duration: Duration, failed: Bool) {
        (self.sql, self.parameterCount, self.duration, self.failed) = (sql, parameterCount, duration, failed)
    }
}
