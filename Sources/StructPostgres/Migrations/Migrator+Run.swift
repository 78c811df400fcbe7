import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension Migrator {
    /// The advisory lock key: the first eight bytes of "structpg".
    static let lockKey: Int64 = 0x7374_7275_6374_7067

    /// Runs `run` on a dedicated connection (not the pool's: migrations may change session settings), holding
    /// the migration lock, with what `plan` made of the history's rows.
    ///
    /// `plan` reads the history as it is (no rows without a table) and throws whatever the migrator refuses; only
    /// then is the history table created and `run` started, so that a refused run (`migrationRefused`) leaves the
    /// database exactly as it was. In a dry run, neither lock nor table: `run` sees the history as it is.
    func withHistory<Plan, T>(
        planning plan: ([MigrationHistory.Row]) throws -> Plan,
        run: (MigrationHistory, Plan) async throws -> T
    ) async throws -> T {
        try await withDedicatedSession { session in
            if options.dryRun {
                let history = try await MigrationHistory.resolve(options.historyTable, session: session)
                return try await run(history, try plan(try await history.exists() ? history.rows() : []))
            }
            return try await withLock {
                let history = try await MigrationHistory.resolve(options.historyTable, session: session)
                let planned = try plan(try await history.exists() ? history.rows() : [])
                try await history.create()
                return try await run(history, planned)
            }
        }
    }

    /// The part of `migration` that runs in `direction`.
    /// - Throws: `migrationRefused` for a down part the file does not have, or an up part with no statement (a file
    ///   `structpg migrate new` has just made): checked for every step before the first runs.
    static func part(of migration: Migration, _ direction: MigrationRun.Step.Direction) throws -> Migration.Part {
        guard let part = direction == .up ? migration.up : migration.down else {
            throw StructPostgresError.refused(
                "\(migration.fileName) has no '-- migrate:down' part to roll back with", file: migration.fileName)
        }
        if direction == .up, part.statements.isEmpty {
            throw StructPostgresError.refused("the up part holds no SQL statement", file: migration.fileName, line: part.firstLine)
        }
        return part
    }

    func readHistory() async throws -> [MigrationHistory.Row] {
        try await withDedicatedSession { session in
            let history = try await MigrationHistory.resolve(options.historyTable, session: session)
            return try await history.exists() ? history.rows() : []
        }
    }

    /// A connection of its own, opened directly (so a wrong password or an unreachable server fails at once)
    /// and closed afterwards.
    /// Its statements are never prepared: migrations run rarely, and behind a pooler in transaction mode a name
    /// prepared by another process on the same server session (42P05) would fail a migration's transaction.
    private func withDedicatedSession<T>(_ body: (DatabaseSession) async throws -> T) async throws -> T {
        try await service.path.dedicatedSession { session in
            var unnamed = session
            unnamed.namesStatements = false
            return try await body(unnamed)
        }
    }

    /// Runs `body` holding the migration lock: a transaction-scoped advisory lock, taken in a transaction left open
    /// on a second connection until `body` ends. A transaction keeps its server session also through a pooler in
    /// transaction mode, and the lock ends with the transaction whatever happens (the connection lost, the process
    /// killed): a session lock could be taken on one pooled server session and left held there by an unlock sent
    /// on another.
    private func withLock<T>(_ body: () async throws -> T) async throws -> T {
        try await withDedicatedSession { lock in
            let deadline = ContinuousClock.now + options.lockTimeout
            while true {
                // A waiting runner keeps no transaction open between attempts: CREATE INDEX CONCURRENTLY waits
                // for open transactions, and would wait for this one.
                try await lock.execute(statement: "BEGIN")
                if try await lock.run("SELECT pg_try_advisory_xact_lock(\(Self.lockKey))").first?.decode(Bool.self) == true {
                    // A statement that takes no snapshot replaces the SELECT's portal, whose snapshot would otherwise
                    // hold back CREATE INDEX CONCURRENTLY; and the server's idle timeout must not end the lock.
                    try await lock.execute(statement: "SET LOCAL idle_in_transaction_session_timeout = 0")
                    break
                }
                await lock.rollBack()
                guard ContinuousClock.now < deadline else {
                    throw StructPostgresError.refused("another migrator held the migration lock for longer than \(options.lockTimeout)")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            do {
                let result = try await body()
                await lock.rollBack()
                return result
            } catch {
                await lock.rollBack()
                throw error
            }
        }
    }

    /// Refuses a history that does not match the files: failed, changed, missing or out-of-order migrations.
    func check(_ rows: [MigrationHistory.Row], refuseOutOfOrder: Bool) throws {
        for row in rows {
            if row.state == "failed" {
                let place = row.failedStatement.map { " at statement \($0)" + (row.failedLine.map { " (line \($0))" } ?? "") } ?? ""
                throw StructPostgresError.refused(
                    "migration \(row.version) (\(row.name)) failed\(place): \(row.error ?? "unknown error"); clean up what it did, then run `structpg migrate repair`",
                    file: migrations[row.version]?.fileName, line: row.failedLine)
            }
            guard let migration = migrations[row.version] else {
                throw StructPostgresError.refused(
                    "migration \(row.version) (\(row.name)) was applied but its file is missing; restore it, or forget it with `structpg migrate repair --accept \(row.version)`"
                )
            }
            if migration.checksum != row.checksum {
                throw StructPostgresError.refused(
                    "\(migration.fileName) changed after it was applied; restore it, or accept the change with `structpg migrate repair --accept \(row.version)`",
                    file: migration.fileName)
            }
        }
        if refuseOutOfOrder, let newest = rows.map(\.version).max() {
            let applied = Set(rows.map(\.version))
            if let older = migrations.migrations.first(where: { !applied.contains($0.version) && $0.version < newest }) {
                throw StructPostgresError.refused(
                    "\(older.fileName) is older than the newest applied migration (\(newest)); renumber it, or allow out-of-order migrations",
                    file: older.fileName)
            }
        }
    }

    /// Runs one direction of a migration and records it; a transactional part and its history change
    /// commit together or not at all.
    func apply(_ migration: Migration, direction: MigrationRun.Step.Direction, history: MigrationHistory) async throws -> MigrationRun.Step
    {
        let part = try Self.part(of: migration, direction)
        let statements = part.statements
        // A statement ending in a `--` comment gets its `;` on a line of its own, so the text pastes into psql.
        func terminated(_ sql: String) -> String {
            (sql.split(separator: "\n").last?.contains("--") == true) ? sql + "\n;" : sql + ";"
        }
        let sql = (part.transactional ? ["BEGIN"] + statements.map(\.sql) + ["COMMIT"] : statements.map(\.sql))
            .map(terminated).joined(separator: "\n")
        if options.dryRun { return .init(migration: migration, direction: direction, milliseconds: 0, sql: sql) }

        let session = history.session
        let start = ContinuousClock.now
        func elapsed() -> Int {
            Int(
                (ContinuousClock.now - start).components.seconds * 1000 + (ContinuousClock.now - start).components.attoseconds
                    / 1_000_000_000_000_000)
        }
        if part.transactional { try await session.execute(statement: "BEGIN") }
        for (index, statement) in statements.enumerated() {
            do {
                _ = try await session.run(Statement(sql: statement.sql))
            } catch let error as StructPostgresError {
                var failure = Self.failure(error, migration: migration, statement: statement)
                if part.transactional {
                    try? await session.execute(statement: "ROLLBACK")
                } else if direction == .up {
                    do {
                        try await history.record(
                            migration, state: "failed", milliseconds: elapsed(), failedStatement: index + 1,
                            failedLine: failure.line, error: error.message)
                    } catch {
                        failure.message += " (and the failure could not be recorded in the history: \(error))"
                    }
                } else {
                    failure.message += " (statements before it were reverted; the migration is still recorded as applied)"
                }
                throw failure
            }
        }
        do {
            if direction == .up {
                try await history.record(migration, state: "applied", milliseconds: elapsed())
            } else {
                try await history.delete(version: migration.version)
            }
            if part.transactional { try await session.commit() }
            // Session settings a migration changed (search_path, role, timeouts) must not reach the next one.
            try await session.execute(statement: "RESET ALL")
            try await session.execute(statement: "RESET ROLE")
        } catch var error as StructPostgresError {
            if part.transactional { try? await session.execute(statement: "ROLLBACK") }
            error.code = .migrationFailed
            error.file = migration.fileName
            error.message = "\(migration.fileName): \(error.message)"
            throw error
        }
        let step = MigrationRun.Step(migration: migration, direction: direction, milliseconds: elapsed(), sql: sql)
        options.progress?(step)
        return step
    }

    /// The error of a failed statement, pointing at the file and the line PostgreSQL pointed at.
    static func failure(_ error: StructPostgresError, migration: Migration, statement: SQLScript.Statement) -> StructPostgresError {
        var line = statement.line
        if let position = error.position {
            line += statement.sql.unicodeScalars.prefix(max(0, position - 1)).filter { $0 == "\n" }.count
        }
        var failure = error
        failure.code = .migrationFailed
        failure.file = migration.fileName
        failure.line = line
        failure.message = "\(migration.fileName):\(line): \(error.message)"
        return failure
    }
}
