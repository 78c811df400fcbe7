import StructPostgresCore
import StructPostgresDriver

extension SchemaComparison {
    /// What the version column of an entity with a version (``EntityProtocol/versionKey``) lacks: writes need it to
    /// hold whole numbers and refuse NULL, and rows inserted by other means (SQL, a migration that adds it) start at 1.
    struct VersionColumnState {
        let column: String
        let property: String?
        /// Why it is not what writes need: each `integer`, `NOT NULL`, `DEFAULT 1` it misses.
        let missing: [String]
        let isInteger: Bool
        let notNull: Bool
        let hasDefaultOne: Bool
    }

    /// The version column's state in `schema`; `nil` for an entity without a version, or one whose version column
    /// is missing (reported as a missing column) or unknown (reported by ``versionMismatches(_:_:row:)``).
    func versionColumnState(_ schema: TableSchema, _ session: DatabaseSession, row: RowEncoder.Row) async throws -> VersionColumnState? {
        guard let key = E.versionKey,
            let column = try? EntityDescription.resolve(key, schema: schema, naming: E.columnNaming, entity: entity),
            let info = schema.columns[column]
        else { return nil }
        var statement = Statement(sql: "")
        let table = statement.bind(.int8(schema.oid))
        let name = statement.bind(.text(column))
        statement.sql = """
            SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d \
            JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
            WHERE d.adrelid = \(table)::oid AND a.attname = \(name)
            """
        let expression = try await session.run(statement).first?.decode(String?.self) ?? nil
        let hasDefaultOne = expression.map { ["1", "'1'::integer", "'1'::bigint", "'1'::smallint"].contains($0) } ?? false
        var missing: [String] = []
        if !info.isInteger { missing.append("integer") }
        if !info.notNull { missing.append("NOT NULL") }
        if !hasDefaultOne { missing.append("DEFAULT 1") }
        return VersionColumnState(
            column: column, property: row.columns.firstIndex(of: column).map { row.properties[$0] }, missing: missing,
            isInteger: info.isInteger, notNull: info.notNull, hasDefaultOne: hasDefaultOne)
    }

    /// The mismatches of the version: a `versionKey` that names no encoded property, or a column that is not
    /// `integer NOT NULL DEFAULT 1` (or `bigint`).
    func versionMismatches(_ schema: TableSchema, _ session: DatabaseSession, row: RowEncoder.Row) async throws -> [SchemaMismatch] {
        guard let key = E.versionKey else { return [] }
        let encoded = row.properties.contains(key) || row.columns.contains(key) || row.columns.contains(E.columnNaming.column(for: key))
        guard encoded else {
            return [
                mismatch(
                    .versionColumn, property: key,
                    "versionKey '\(key)' names no property \(entity) encodes (properties: \(row.properties.joined(separator: ", "))); name its integer version property"
                )
            ]
        }
        guard let state = try await versionColumnState(schema, session, row: row), !state.missing.isEmpty else { return [] }
        return [
            mismatch(
                .versionColumn, property: state.property, column: state.column,
                "column '\(state.column)' is the version of \(entity) but is not \(state.missing.joined(separator: ", ")): declare it integer NOT NULL DEFAULT 1, which conditional writes need"
            )
        ]
    }
}
