import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// Applies the SQL migrations of a ``MigrationSet`` to a database, recording them in a history table.
///
/// Each run holds an advisory lock before it reads the history, so that concurrent runners (two app instances,
/// two deploys) apply each migration exactly once: a transaction-scoped lock in a transaction kept open on a
/// second dedicated connection, which also holds through PgBouncer in transaction mode. Waiting runners poll with
/// `pg_try_advisory_xact_lock` rather than block, since a blocked lock deadlocks against `CREATE INDEX CONCURRENTLY`.
///
/// ```swift
/// let migrator = Migrator(service: service, migrations: try MigrationSet(directory: URL(fileURLWithPath: "migrations")))
/// try await migrator.migrate()          // up to the latest
/// try await migrator.rollback(steps: 1)
/// for row in try await migrator.status() { print(row.version, row.name, row.state) }
/// ```
public struct Migrator: Sendable {
    /// How a ``Migrator`` runs: ordering, locking, the history table and dry runs.
    public struct Options: Sendable {
        /// Apply a pending migration older than the newest applied one instead of refusing.
        public var allowOutOfOrder = false
        /// How long to wait for another runner's lock.
        public var lockTimeout: Duration = .seconds(60)
        /// The history table (schema-qualified if you like).
        public var historyTable = "structpg_migrations"
        /// Plan and return the SQL without running it or taking the lock.
        public var dryRun = false
        /// Called after each migration step, as it completes.
        public var progress: (@Sendable (MigrationRun.Step) -> Void)?

        /// Options with the given settings; ``progress`` is set on the property.
        public init(
            allowOutOfOrder: Bool = false, lockTimeout: Duration = .seconds(60),
            historyTable: String = "structpg_migrations", dryRun: Bool = false
        ) {
            self.allowOutOfOrder = allowOutOfOrder
            self.lockTimeout = lockTimeout
            self.historyTable = historyTable
            self.dryRun = dryRun
        }
    }

    /// The service whose primary the migrations run on, over a dedicated connection.
    public let service: PostgresService
    /// The migrations to apply.
    public let migrations: MigrationSet
    /// How the migrator runs.
    public var options: Options

    /// A migrator of `migrations` for the database of `service`.
    public init(service: PostgresService, migrations: MigrationSet, options: Options = .init()) {
        self.service = service
        self.migrations = migrations
        self.options = options
    }

    /// Applies pending migrations, in version order, up to `target` (inclusive) or the latest.
    @discardableResult
    public func migrate(to target: Int64? = nil) async throws -> MigrationRun {
        try await service.path.measure(Operation(.migrate)) { _ in try await applyPending(to: target) }
    }

    private func applyPending(to target: Int64?) async throws -> MigrationRun {
        try await withHistory { rows in
            try check(rows, refuseOutOfOrder: !options.allowOutOfOrder)
            if let target, migrations[target] == nil {
                throw StructPostgresError.refused("there is no migration with version \(target)")
            }
            let applied = Set(rows.map(\.version))
            let pending = migrations.migrations.filter { !applied.contains($0.version) && $0.version <= (target ?? .max) }
            for migration in pending { _ = try Self.part(of: migration, .up) }
            return pending
        } run: { history, pending in
            var run = MigrationRun()
            for migration in pending {
                run.steps.append(try await apply(migration, direction: .up, history: history))
            }
            return run
        }
    }

    /// Reverts the `steps` most recently applied migrations (by time applied), newest first, with their down parts.
    @discardableResult
    public func rollback(steps: Int = 1) async throws -> MigrationRun {
        guard steps > 0 else {
            throw StructPostgresError(.invalidConfiguration, "rollback(steps:) takes a positive number of migrations, not \(steps)")
        }
        return try await withHistory { rows in
            try check(rows, refuseOutOfOrder: false)
            return try rows.reversed().prefix(steps).map { row in
                guard row.state != "baseline" else {
                    throw StructPostgresError.refused(
                        "migration \(row.version) (\(row.name)) was baselined, not applied; it cannot be rolled back")
                }
                let migration = migrations[row.version]!
                _ = try Self.part(of: migration, .down)
                return migration
            }
        } run: { history, newestFirst in
            var run = MigrationRun()
            for migration in newestFirst {
                run.steps.append(try await apply(migration, direction: .down, history: history))
            }
            return run
        }
    }

    /// Rolls back the newest applied migration and applies it again.
    @discardableResult
    public func redo() async throws -> MigrationRun {
        try await withHistory { rows in
            try check(rows, refuseOutOfOrder: false)
            guard let row = rows.last else { throw StructPostgresError.refused("no applied migration to redo") }
            guard row.state != "baseline" else {
                throw StructPostgresError.refused("migration \(row.version) (\(row.name)) was baselined, not applied; it cannot be redone")
            }
            let migration = migrations[row.version]!
            _ = try Self.part(of: migration, .down)
            _ = try Self.part(of: migration, .up)
            return migration
        } run: { history, migration in
            var run = MigrationRun()
            run.steps.append(try await apply(migration, direction: .down, history: history))
            run.steps.append(try await apply(migration, direction: .up, history: history))
            return run
        }
    }

    /// Every migration, applied or not, and every history row without a file.
    public func status() async throws -> [MigrationStatus] {
        let rows = try await readHistory()
        let byVersion = Dictionary(uniqueKeysWithValues: rows.map { ($0.version, $0) })
        var result: [MigrationStatus] = migrations.migrations.map { migration in
            guard let row = byVersion[migration.version] else {
                return MigrationStatus(version: migration.version, name: migration.name, state: .pending)
            }
            var state: MigrationStatus.State = row.state == "failed" ? .failed : row.state == "baseline" ? .baseline : .applied
            if state != .failed && row.checksum != migration.checksum { state = .changed }
            return MigrationStatus(
                version: row.version, name: migration.name, state: state, appliedAt: row.appliedAt,
                executionMilliseconds: row.executionMilliseconds, failedStatement: row.failedStatement,
                failedLine: row.failedLine, error: row.error)
        }
        for row in rows where migrations[row.version] == nil {
            result.append(
                MigrationStatus(
                    version: row.version, name: row.name, state: .missing, appliedAt: row.appliedAt,
                    executionMilliseconds: row.executionMilliseconds))
        }
        return result.sorted { $0.version < $1.version }
    }

    /// Checks the history against the files without applying anything; throws what `migrate()` would refuse.
    /// - Returns: the pending migrations.
    public func verify() async throws -> [Migration] {
        let rows = try await readHistory()
        try check(rows, refuseOutOfOrder: !options.allowOutOfOrder)
        let applied = Set(rows.map(\.version))
        return migrations.migrations.filter { !applied.contains($0.version) }
    }

    /// Accepts changed files (stores their new checksums), forgets history rows whose file is gone, and
    /// clears failed migrations so they can run again. With `version`, only that migration.
    /// - Returns: one line per change made.
    @discardableResult
    public func repair(accept version: Int64? = nil) async throws -> [String] {
        try await withHistory { rows in
            if let version, !rows.contains(where: { $0.version == version }) {
                throw StructPostgresError.refused("migration \(version) is not in the history; nothing to repair")
            }
            return rows
        } run: { history, rows in
            var actions: [String] = []
            for row in rows where version == nil || row.version == version {
                let migration = migrations[row.version]
                if row.state == "failed" {
                    try await history.delete(version: row.version)
                    actions.append("cleared failed migration \(row.version) (\(row.name)); it will run again from its first statement")
                } else if let migration, migration.checksum != row.checksum {
                    try await history.accept(migration)
                    actions.append("accepted the changed file \(migration.fileName)")
                } else if migration == nil {
                    try await history.delete(version: row.version)
                    actions.append("forgot migration \(row.version) (\(row.name)), whose file is missing")
                }
            }
            return actions
        }
    }

    /// Adopts an existing database: records every migration up to `version` as applied without running it.
    public func baseline(_ version: Int64) async throws {
        try await withHistory { rows in
            guard rows.isEmpty else {
                throw StructPostgresError.refused(
                    "the history already holds \(rows.count) migrations; baseline only adopts a database without one")
            }
            guard migrations[version] != nil else { throw StructPostgresError.refused("there is no migration with version \(version)") }
            return migrations.migrations.filter { $0.version <= version }
        } run: { history, adopted in
            for migration in adopted {
                try await history.record(migration, state: "baseline", milliseconds: 0)
            }
        }
    }
}
