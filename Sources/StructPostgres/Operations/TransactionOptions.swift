import StructPostgresCore
import StructPostgresDriver

/// How a transaction runs.
public struct TransactionOptions: Sendable, Equatable {
    /// PostgreSQL's isolation levels.
    public enum Isolation: String, Sendable {
        /// `READ COMMITTED`: each statement sees the rows committed before it began.
        case readCommitted = "READ COMMITTED"
        /// `REPEATABLE READ`: every statement sees the snapshot taken at the first one.
        case repeatableRead = "REPEATABLE READ"
        /// `SERIALIZABLE`: as if the transactions ran one at a time; a conflict fails with SQLSTATE 40001.
        case serializable = "SERIALIZABLE"
    }

    /// The isolation level; `nil` keeps the server's default (read committed unless configured).
    public var isolation: Isolation?
    /// Refuse writes inside the transaction.
    public var readOnly: Bool
    /// How often a serialization failure or deadlock re-runs the whole closure; `nil` takes the service's setting.
    public var maxRetries: Int?

    /// Options with the given isolation level, read-only mode and retries; each defaults to its property's default.
    public init(isolation: Isolation? = nil, readOnly: Bool = false, maxRetries: Int? = nil) {
        self.isolation = isolation
        self.readOnly = readOnly
        self.maxRetries = maxRetries
    }

    var beginSQL: String {
        var sql = "BEGIN"
        if let isolation { sql += " ISOLATION LEVEL \(isolation.rawValue)" }
        if readOnly { sql += " READ ONLY" }
        return sql
    }
}
