import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Where one migration stands, as `structpg migrate status` shows it.
public struct MigrationStatus: Sendable, Codable, Equatable {
    /// What the history table says of a migration, compared with its file.
    public enum State: String, Sendable, Codable {
        /// Applied, file unchanged.
        case applied
        /// Marked as applied by `baseline`, never run.
        case baseline
        /// Not applied yet.
        case pending
        /// A non-transactional migration stopped at ``MigrationStatus/failedStatement``.
        case failed
        /// Applied, but the file changed since.
        case changed
        /// Applied, but its file is gone.
        case missing
    }

    /// The migration's version.
    public var version: Int64
    /// The migration's name: from its file, or from the history table when the file is gone.
    public var name: String
    /// Where the migration stands.
    public var state: State
    /// When the history table recorded it; `nil` while pending.
    public var appliedAt: Date?
    /// How long it took to run, in milliseconds; `nil` while pending.
    public var executionMilliseconds: Int?
    /// The 1-based number of the statement that failed, for a `.failed` migration.
    public var failedStatement: Int?
    /// The line of the file where the failed statement is, when known.
    public var failedLine: Int?
    /// The error message of the failed statement.
    public var error: String?
}

/// What a migrator run did, or, with `dryRun`, would do.
public struct MigrationRun: Sendable {
    /// One migration applied or reverted.
    public struct Step: Sendable {
        /// `up` runs the up part, `down` the down part.
        public enum Direction: String, Sendable { case up, down }
        /// The migration applied or reverted.
        public var migration: Migration
        /// Which part ran.
        public var direction: Direction
        /// Milliseconds it took; 0 in a dry run.
        public var milliseconds: Int
        /// The SQL that ran, or would run.
        public var sql: String
    }
    /// The steps, in the order they ran.
    public var steps: [Step] = []
}
