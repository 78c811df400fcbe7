import Foundation

/// Where one migration stands, as `structpg migrate status` shows it.
public struct MigrationStatus: Sendable, Codable, Equatable {
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

    public var version: Int64
    public var name: String
    public var state: State
    public var appliedAt: Date?
    public var executionMilliseconds: Int?
    public var failedStatement: Int?
    public var failedLine: Int?
    public var error: String?
}

/// What a migrator run did, or, with `dryRun`, would do.
public struct MigrationRun: Sendable {
    public struct Step: Sendable {
        public enum Direction: String, Sendable { case up, down }
        public var migration: Migration
        public var direction: Direction
        /// Milliseconds it took; 0 in a dry run.
        public var milliseconds: Int
        /// The SQL that ran, or would run.
        public var sql: String
    }
    public var steps: [Step] = []
}
