/// SQLSTATE codes StructPostgres reacts to, named for matching ``StructPostgresError/sqlState``.
public enum SQLState {
    public static let uniqueViolation = "23505"
    public static let foreignKeyViolation = "23503"
    public static let notNullViolation = "23502"
    public static let checkViolation = "23514"
    public static let serializationFailure = "40001"
    public static let deadlockDetected = "40P01"
    public static let queryCanceled = "57014"
    public static let undefinedTable = "42P01"
    public static let undefinedColumn = "42703"
    public static let numericValueOutOfRange = "22003"
    public static let stringDataRightTruncation = "22001"
    public static let characterNotInRepertoire = "22021"
    public static let untranslatableCharacter = "22P05"
    public static let invalidPassword = "28P01"
    public static let adminShutdown = "57P01"
    /// A statement sent after another one of the same transaction failed: PostgreSQL ignores it.
    public static let inFailedTransaction = "25P02"
    /// A write refused because the transaction is read-only: on a standby, or on a primary set read-only (as a
    /// planned switchover does before promoting another host).
    public static let readOnlySQLTransaction = "25006"

    static func code(for sqlState: String) -> StructPostgresError.Code {
        switch sqlState {
        case uniqueViolation: .uniqueViolation
        case foreignKeyViolation: .foreignKeyViolation
        case notNullViolation: .notNullViolation
        case checkViolation: .checkViolation
        case serializationFailure: .serializationFailure
        case deadlockDetected: .deadlock
        case queryCanceled: .queryCancelled
        case undefinedTable: .undefinedTable
        case undefinedColumn: .undefinedColumn
        case _ where sqlState.hasPrefix("22"): .invalidValue
        case _ where sqlState.hasPrefix("08"), adminShutdown, "57P02", "57P03": .connectionLost
        default: .server
        }
    }
}
