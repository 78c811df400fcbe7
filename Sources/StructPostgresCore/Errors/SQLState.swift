/// SQLSTATE codes StructPostgres reacts to, named for matching ``StructPostgresError/sqlState``.
public enum SQLState {
    /// 23505 unique_violation.
    public static let uniqueViolation = "23505"
    /// 23503 foreign_key_violation.
    public static let foreignKeyViolation = "23503"
    /// 23502 not_null_violation.
    public static let notNullViolation = "23502"
    /// 23514 check_violation.
    public static let checkViolation = "23514"
    /// 40001 serialization_failure.
    public static let serializationFailure = "40001"
    /// 40P01 deadlock_detected.
    public static let deadlockDetected = "40P01"
    /// 57014 query_canceled.
    public static let queryCanceled = "57014"
    /// 42P01 undefined_table.
    public static let undefinedTable = "42P01"
    /// 42703 undefined_column.
    public static let undefinedColumn = "42703"
    /// 22003 numeric_value_out_of_range.
    public static let numericValueOutOfRange = "22003"
    /// 22001 string_data_right_truncation.
    public static let stringDataRightTruncation = "22001"
    /// 22021 character_not_in_repertoire.
    public static let characterNotInRepertoire = "22021"
    /// 22P05 untranslatable_character.
    public static let untranslatableCharacter = "22P05"
    /// 28P01 invalid_password.
    public static let invalidPassword = "28P01"
    /// 57P01 admin_shutdown.
    public static let adminShutdown = "57P01"
    /// A statement sent after another one of the same transaction failed: PostgreSQL ignores it.
    public static let inFailedTransaction = "25P02"
    /// A write refused because the transaction is read-only: on a standby, or on a primary set read-only (as a
    /// planned switchover does before promoting another host).
    public static let readOnlySQLTransaction = "25006"

    package static func code(for sqlState: String) -> StructPostgresError.Code {
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
