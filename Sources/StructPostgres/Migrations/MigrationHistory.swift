import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// The history table: one row per applied (or failed, or baselined) migration.
struct MigrationHistory {
    struct Row: Sendable {
        var version: Int64
        var name: String
        var checksum: String
        var appliedAt: Date
        var executionMilliseconds: Int
        var state: String
        var failedStatement: Int?
        var failedLine: Int?
        var error: String?
    }

    let table: String
    let session: DatabaseSession

    var quoted: String { SQLIdentifier.quoteQualified(table) }

    /// Qualifies an unqualified table name with the current schema once, so that a migration changing
    /// `search_path` cannot make the history table disappear.
    static func resolve(_ table: String, session: DatabaseSession) async throws -> MigrationHistory {
        guard !table.contains(".") else { return MigrationHistory(table: table, session: session) }
        guard let schema = try await session.run("SELECT current_schema()::text").first?.decode(String?.self) else {
            throw StructPostgresError.refused(
                "no schema is current (search_path is empty); qualify the history table, e.g. public.\(table)")
        }
        return MigrationHistory(table: "\(schema).\(table)", session: session)
    }

    func create() async throws {
        try await session.execute(
            statement: """
                CREATE TABLE IF NOT EXISTS \(quoted) (
                    version bigint PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now(),
                    execution_ms integer NOT NULL DEFAULT 0,
                    state text NOT NULL DEFAULT 'applied' CHECK (state IN ('applied', 'failed', 'baseline')),
                    failed_statement integer,
                    failed_line integer,
                    error text
                )
                """)
    }

    func exists() async throws -> Bool {
        let rows = try await session.run("SELECT to_regclass(\(quoted)) IS NOT NULL")
        return try rows.first?.decode(Bool.self) ?? false
    }

    func rows() async throws -> [Row] {
        let rows = try await session.run(
            PostgresQuery(
                unsafeSQL: """
                    SELECT version, name, checksum, applied_at, execution_ms, state, failed_statement, failed_line, error
                    FROM \(quoted) ORDER BY applied_at, version
                    """))
        return try rows.map { row in
            let (version, name, checksum, appliedAt, ms, state, statement, line, error) =
                try row.decode((Int64, String, String, Date, Int32, String, Int32?, Int32?, String?).self)
            return Row(
                version: version, name: name, checksum: checksum, appliedAt: appliedAt, executionMilliseconds: Int(ms),
                state: state, failedStatement: statement.map(Int.init), failedLine: line.map(Int.init), error: error)
        }
    }

    func record(
        _ migration: Migration, state: String, milliseconds: Int, failedStatement: Int? = nil, failedLine: Int? = nil, error: String? = nil
    ) async throws {
        var statement = Statement(sql: "")
        let values = [
            statement.bind(.int8(migration.version)), statement.bind(.text(migration.name)),
            statement.bind(.text(migration.checksum)), statement.bind(.int4(Int32(milliseconds))),
            statement.bind(.text(state)), statement.bind(failedStatement.map { .int4(Int32($0)) } ?? .null),
            statement.bind(failedLine.map { .int4(Int32($0)) } ?? .null), statement.bind(error.map(ColumnValue.text) ?? .null),
        ]
        statement.sql = """
            INSERT INTO \(quoted) (version, name, checksum, execution_ms, state, failed_statement, failed_line, error)
            VALUES (\(values.joined(separator: ", ")))
            ON CONFLICT (version) DO UPDATE SET name = EXCLUDED.name, checksum = EXCLUDED.checksum,
                applied_at = now(), execution_ms = EXCLUDED.execution_ms, state = EXCLUDED.state,
                failed_statement = EXCLUDED.failed_statement, failed_line = EXCLUDED.failed_line, error = EXCLUDED.error
            """
        _ = try await session.run(statement)
    }

    func delete(version: Int64) async throws {
        var statement = Statement(sql: "")
        statement.sql = "DELETE FROM \(quoted) WHERE version = \(statement.bind(.int8(version)))"
        _ = try await session.run(statement)
    }

    func accept(_ migration: Migration) async throws {
        var statement = Statement(sql: "")
        let checksum = statement.bind(.text(migration.checksum))
        let name = statement.bind(.text(migration.name))
        statement.sql =
            "UPDATE \(quoted) SET checksum = \(checksum), name = \(name) WHERE version = \(statement.bind(.int8(migration.version)))"
        _ = try await session.run(statement)
    }
}
