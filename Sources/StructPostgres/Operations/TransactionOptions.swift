/// How a transaction runs.
public struct TransactionOptions: Sendable, Equatable {
    /// PostgreSQL's isolation levels.
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// The isolation level; `nil` keeps the server's default (read committed unless configured).
    public var isolation: Isolation?
    /// Refuse writes inside the transaction.
    public var readOnly: Bool
    /// How often a serialization failure or deadlock re-runs the whole closure; `nil` takes the service's setting.
    public var maxRetries: Int?

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
