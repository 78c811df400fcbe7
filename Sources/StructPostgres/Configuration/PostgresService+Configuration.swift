import CoreMetrics
import Logging
import Tracing

extension PostgresService {
    /// Everything a ``PostgresService`` needs: where to connect, the pool, logging and retries.
    public struct Configuration: Sendable {
        public var connection: ConnectionSettings
        public var pool: PoolOptions
        /// Receives one `debug` line per statement (SQL only) and errors.
        public var logger: Logger
        /// Log bound values, and keep PostgreSQL's `DETAIL` (which quotes values) in errors. Off by default.
        public var logBoundValues: Bool
        /// How often a transaction failing with SQLSTATE 40001 or 40P01 is run again before its error is thrown.
        public var maxTransactionRetries: Int
        /// Called after every statement the service sends; useful for counting statements in tests.
        public var queryObserver: (@Sendable (QueryEvent) -> Void)?
        /// Prepare statements once per connection and reuse them (on by default). Turn off behind a pooler
        /// that does not keep a server connection per client connection, such as PgBouncer in transaction mode
        /// before 1.21: every statement is then parsed and planned each time it is sent.
        public var preparesStatements = true
        /// What a fetch that names no ``Loading`` loads (``Loading/default``): every relationship to three levels
        /// unless set. `.none` makes every plain fetch one query.
        public var defaultLoading: Loading = .threeLevels
        /// How long the listening connection of observers (``PostgresService/observe(_:where:sortedBy:limit:loading:)-(_,Filter?,_,_,_)``)
        /// keeps trying to reconnect after it is lost before observers receive the error.
        public var listenerReconnectTimeout: Duration = .seconds(60)
        /// The tracer of the service's spans; `nil` takes `InstrumentationSystem.tracer` (what the app bootstrapped)
        /// at each operation. See the *Observability* article.
        public var tracer: (any Tracer)?
        /// Where the service's metrics go; `nil` takes `MetricsSystem.factory` (what the app bootstrapped).
        public var metricsFactory: (any MetricsFactory)?
        /// Put each statement's parameterized SQL in its span's `db.query.text` (on by default; bound values never).
        public var tracesQueryText = true

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
        public static func fromEnvironment(pool: PoolOptions = .init()) throws -> Configuration {
            Configuration(connection: try ConnectionSettings.fromEnvironment(), pool: pool)
        }
    }
}

/// One statement the service sent, as seen by ``PostgresService/Configuration-swift.struct/queryObserver``.
public struct QueryEvent: Sendable {
    /// The SQL, without bound values.
    public var sql: String
    /// How many values were bound.
    public var parameterCount: Int
    /// How long the statement took, until its last row was read.
    public var duration: Duration
    /// Whether it failed.
    public var failed: Bool
}
