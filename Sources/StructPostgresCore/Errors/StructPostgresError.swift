/// The one error type StructPostgres throws.
///
/// Switch on ``code`` to react to a kind of failure; read the context fields to see what and where.
/// ``description`` is safe to log: it never contains a password or a bound value
/// (unless ``PostgresConfiguration/logBoundValues`` was switched on, in which
/// case PostgreSQL's `DETAIL`, which may quote values, is kept too).
///
/// ```swift
/// do {
///     try await service.update(entities: books)
/// } catch let error as StructPostgresError where error.code == .uniqueViolation {
///     print("duplicate", error.constraint ?? "?")
/// }
/// ```
public struct StructPostgresError: Error, Sendable, CustomStringConvertible {
    /// A kind of failure. New codes may be added; match the ones you handle and keep a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Sendable {
            case uniqueViolation, foreignKeyViolation, notNullViolation, checkViolation
            case serializationFailure, deadlock, queryCancelled, poolTimeout, connectionLost
            case decoding, undefinedTable, undefinedColumn, invalidValue, unsupportedType
            case invalidConfiguration, transactionMisuse, server, client
            case migrationFailed, migrationRefused, unsupportedPredicate, schemaMismatch
            case deadlineExceeded
            case versionConflict
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }

        /// SQLSTATE 23505: a row with the same unique key exists.
        public static let uniqueViolation = Self(.uniqueViolation)
        /// SQLSTATE 23503: a referenced row is missing, or a referencing row still exists.
        public static let foreignKeyViolation = Self(.foreignKeyViolation)
        /// SQLSTATE 23502: a `NOT NULL` column received a null.
        public static let notNullViolation = Self(.notNullViolation)
        /// SQLSTATE 23514: a `CHECK` constraint refused the row.
        public static let checkViolation = Self(.checkViolation)
        /// SQLSTATE 40001: the transaction could not be serialized; running it again may succeed.
        public static let serializationFailure = Self(.serializationFailure)
        /// SQLSTATE 40P01: the transaction was chosen as a deadlock victim; running it again may succeed.
        public static let deadlock = Self(.deadlock)
        /// SQLSTATE 57014, or the task was cancelled: the statement was cancelled.
        public static let queryCancelled = Self(.queryCancelled)
        /// No connection became free within the pool's acquire timeout.
        public static let poolTimeout = Self(.poolTimeout)
        /// The call passed its deadline (`PostgresService.withTimeout`, ``PoolOptions/callTimeout``): waiting for a
        /// connection (nothing was sent), or while a statement ran, whose connection was then closed: whether it took
        /// effect is unknown, as after ``connectionLost``. Never sent again by the library.
        public static let deadlineExceeded = Self(.deadlineExceeded)
        /// The connection failed or closed while a statement was running, or could not be opened.
        public static let connectionLost = Self(.connectionLost)
        /// A row could not be decoded into the entity.
        public static let decoding = Self(.decoding)
        /// SQLSTATE 42P01, or the catalog has no such table.
        public static let undefinedTable = Self(.undefinedTable)
        /// SQLSTATE 42703, or an entity names a column the table does not have.
        public static let undefinedColumn = Self(.undefinedColumn)
        /// A value the column cannot hold (out of range, too long, a NUL byte, class 22 SQLSTATEs).
        public static let invalidValue = Self(.invalidValue)
        /// A property whose type cannot be stored in its column.
        public static let unsupportedType = Self(.unsupportedType)
        /// A malformed connection URL, environment variable or option.
        public static let invalidConfiguration = Self(.invalidConfiguration)
        /// A transaction used after it ended, or while a nested one was open.
        public static let transactionMisuse = Self(.transactionMisuse)
        /// A migration's SQL failed; ``StructPostgresError/file`` and ``StructPostgresError/line`` say where.
        public static let migrationFailed = Self(.migrationFailed)
        /// The migrator refused to run: a changed, missing, failed or out-of-order migration, or a bad file.
        public static let migrationRefused = Self(.migrationRefused)
        /// A `#Predicate` expression that cannot be compiled to SQL; the message names the part.
        public static let unsupportedPredicate = Self(.unsupportedPredicate)
        /// The models and the database's schema disagree (``PostgresAccess/verifySchema(of:)``); the message lists
        /// every mismatch.
        public static let schemaMismatch = Self(.schemaMismatch)
        /// A write or delete of a model with a version (``EntityProtocol/versionKey``) met rows whose stored version
        /// differs from the model's, and changed nothing; ``StructPostgresError/conflicts`` lists every one.
        public static let versionConflict = Self(.versionConflict)
        /// Any other error PostgreSQL reported; see ``StructPostgresError/sqlState``.
        public static let server = Self(.server)
        /// Any other client-side failure.
        public static let client = Self(.client)

        /// The code's name, e.g. `uniqueViolation`.
        public var description: String { backing.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A one-line explanation, free of passwords and bound values.
    public var message: String
    /// The five-character SQLSTATE, when PostgreSQL reported one (or the one it would report).
    public var sqlState: String?
    /// The Swift entity type involved.
    public var entity: String?
    /// The table involved.
    public var table: String?
    /// The column involved.
    public var column: String?
    /// The Swift property involved.
    public var property: String?
    /// The constraint PostgreSQL named.
    public var constraint: String?
    /// The key of the row involved, e.g. `uuid=5F0C…`.
    public var rowKey: String?
    /// The relationship involved, e.g. `BookEntity.author`.
    public var relationship: String?
    /// The SQL that failed, without its bound values.
    public var sql: String?
    /// PostgreSQL's `DETAIL`, kept only when bound values may be shown.
    public var detail: String?
    /// PostgreSQL's `HINT`.
    public var hint: String?
    /// Where in ``sql`` PostgreSQL pointed, as a 1-based character offset.
    public var position: Int?
    /// The migration file involved.
    public var file: String?
    /// The line of ``file`` involved, 1-based.
    public var line: Int?
    /// The error this one wraps, when any.
    public var underlying: (any Error & Sendable)?
    /// For ``Code/versionConflict``: every conflicting row, by its unique key, with the version the call had and the
    /// one stored.
    public var conflicts: [VersionConflict] = []
    /// For a foreign-key violation, the key PostgreSQL's `DETAIL` named: `author_id=5F0C…` (keys are shown, values never).
    package var foreignKey: String?
    /// PostgreSQL's `DETAIL`, which may quote values: read to find the row a violation is about, never shown.
    package var serverDetail: HiddenText?
    /// How far the failed statement got, recorded by the session where it failed (see ``SendAgain``); `nil` for an
    /// error that did not come from a statement.
    package var delivery: StatementDelivery?

    /// An error of `code` with `message` and whatever context is known.
    public init(
        _ code: Code, _ message: String, sqlState: String? = nil, entity: String? = nil,
        table: String? = nil, column: String? = nil, property: String? = nil,
        constraint: String? = nil, rowKey: String? = nil, sql: String? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.entity = entity
        self.table = table
        self.column = column
        self.property = property
        self.constraint = constraint
        self.rowKey = rowKey
        self.sql = sql
        self.underlying = underlying
    }

    /// One line: the code, the message, the known context, PostgreSQL's `DETAIL` (when kept) and `HINT`, and the SQL.
    public var description: String {
        var parts = ["\(code): \(message)"]
        let context: [(String, String?)] = [
            ("sqlstate", sqlState), ("entity", entity), ("table", table), ("column", column),
            ("property", property), ("relationship", relationship), ("constraint", constraint), ("row", rowKey),
            ("file", file.map { name in line.map { "\(name):\($0)" } ?? name }),
        ]
        let known = context.compactMap { name, value in value.map { "\(name)=\($0)" } }
        if !known.isEmpty { parts.append("(\(known.joined(separator: ", ")))") }
        if let detail { parts.append("detail: \(detail)") }
        if let hint { parts.append("hint: \(hint)") }
        if let sql { parts.append("sql: \(sql)") }
        return parts.joined(separator: " ")
    }

    /// Whether running the whole transaction again may succeed (serialization failure or deadlock).
    public var isRetryable: Bool { code == .serializationFailure || code == .deadlock }

    /// How long to wait before running work that failed retryably again, after `attempt` failures: a random delay
    /// (so that two transactions that collided do not collide again) growing with each attempt.
    package static func retryDelay(after attempt: Int) -> Duration { .milliseconds(Int.random(in: 1...(5 << min(attempt, 6)))) }

    package func with(entity: String? = nil, table: String? = nil) -> Self {
        var copy = self
        if copy.entity == nil { copy.entity = entity }
        if copy.table == nil { copy.table = table }
        return copy
    }
}

/// Text kept for the library's own use that neither `description` nor reflection (`dump`) shows.
package final class HiddenText: Sendable, CustomReflectable, CustomStringConvertible {
    package let text: String
    package init(_ text: String) { self.text = text }
    package var description: String { "(hidden)" }
    package var customMirror: Mirror { Mirror(self, children: []) }
}
