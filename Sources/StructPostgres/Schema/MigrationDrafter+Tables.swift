import StructPostgresCore
import StructPostgresDriver

extension MigrationDrafter {
    /// `CREATE TABLE` with every column the entity writes, its unique key as the primary key (a `UNIQUE` constraint
    /// when a key property is optional, so that the draft's own verify agrees), and the foreign keys of its to-one
    /// relationships, placed by ``draft``.
    static func createTable<E: EntityProtocol>(_ type: E.Type, row: RowEncoder.Row, optional: Set<String>, foreignKeys: [ToOne]) -> NewTable
    {
        let key = E.uniqueKey.map { E.columnNaming.column(for: $0) }
        var notes: [String] = []
        if let problem = identifierProblem(E.table) { notes.append(review("table of \(E.self): \(problem)")) }
        let optionalKey = key.contains { column in row.columns.firstIndex(of: column).map { optional.contains(row.properties[$0]) } ?? false
        }
        var columns: [NewTable.Column] = []
        for index in row.columns.indices {
            let (column, property) = (row.columns[index], row.properties[index])
            if let problem = identifierProblem(column) {
                notes.append(review("\(E.self).\(property): \(problem)"))
                continue
            }
            if isVersion(E.self, column: column, property: property) {
                columns.append(.init(name: column, type: "integer", notNull: true, defaultValue: "1"))
                continue
            }
            let (type, note) = sqlType(row, index)
            if let note { notes.append(review(note)) }
            columns.append(.init(name: column, type: type, notNull: !optional.contains(property)))
        }
        for column in key where !row.columns.contains(column) {
            notes.append(review("\(E.self).uniqueKey names '\(column)', which \(E.self) does not encode"))
        }
        var toOnes = foreignKeys.map(\.key)
        for relationship in E.relationships {
            guard case .toOne = relationship.info.kind, !foreignKeys.contains(where: { $0.name == relationship.info.name }) else {
                continue
            }
            notes.append(
                review("relationship '\(relationship.info.name)' of \(E.self): no column found for its foreign key; name it with column:"))
        }
        toOnes.removeAll { key in !columns.contains { $0.name == key.column } }
        return NewTable(table: E.table, columns: columns, key: key, keyIsPrimary: !optionalKey, foreignKeys: toOnes, notes: notes)
    }

    /// The table's `CREATE TABLE`, with the foreign keys whose referenced table exists by then (`references`).
    func createStatement(_ new: NewTable, inline: [ForeignKey]) -> String {
        var lines = new.columns.map { column in
            "    \(Self.quote(column.name)) \(column.type)\(column.notNull ? " NOT NULL" : "")"
                + (column.defaultValue.map { " DEFAULT \($0)" } ?? "")
        }
        let key = new.key.filter { name in new.columns.contains { $0.name == name } }
        if !key.isEmpty {
            lines.append("    \(new.keyIsPrimary ? "PRIMARY KEY" : "UNIQUE") (\(key.map(Self.quote).joined(separator: ", ")))")
        }
        for foreignKey in inline {
            lines.append(
                "    FOREIGN KEY (\(Self.quote(foreignKey.column))) REFERENCES \(Self.quoteQualified(foreignKey.referenced)) (\(foreignKey.referencedKey.map(Self.quote).joined(separator: ", ")))"
            )
        }
        let create = "CREATE TABLE \(Self.quoteQualified(new.table)) (\n" + lines.joined(separator: ",\n") + "\n);"
        return (new.notes + [create]).joined(separator: "\n")
    }

    /// A version column's declaration (``EntityProtocol/versionKey``): conditional writes need whole numbers, never
    /// NULL, and rows that other means insert start at 1.
    static let versionType = "integer NOT NULL DEFAULT 1"

    /// Whether `column` (of `property`) is `E`'s version.
    static func isVersion<E: EntityProtocol>(_ type: E.Type, column: String, property: String) -> Bool {
        guard let key = E.versionKey else { return false }
        return key == property || key == column || E.columnNaming.column(for: key) == column
    }

    /// What makes an existing version column `integer NOT NULL DEFAULT 1`: the default, then NULLs set to 1 and
    /// `NOT NULL`; a column of another type is for review (its values must be converted by hand).
    static func alterVersionColumn<E: EntityProtocol>(
        _ state: SchemaComparison<E>.VersionColumnState, table: String, type: E.Type
    ) -> [String] {
        let column = quote(state.column)
        guard state.isInteger else {
            return [
                review(
                    "\(E.self).\(state.property ?? state.column) is the version, but column \(state.column) does not hold whole numbers: convert it to \(versionType) by hand"
                )
            ]
        }
        var lines: [String] = []
        if !state.hasDefaultOne { lines.append("ALTER TABLE \(table) ALTER COLUMN \(column) SET DEFAULT 1;") }
        if !state.notNull {
            lines.append("UPDATE \(table) SET \(column) = 1 WHERE \(column) IS NULL;")
            lines.append("ALTER TABLE \(table) ALTER COLUMN \(column) SET NOT NULL;")
        }
        return lines
    }

    /// The SQL type a write of `value` stores: the table the drafts and the checks share (see *Migrations*). An
    /// array is its element's type with `[]`: `[Int]` is `bigint[]`.
    static func sqlType(of value: ColumnValue) -> String? {
        if case .array(_, let element) = value { return element.map { sqlType(of: $0) + "[]" } }
        return value.wireType.map(sqlType(of:))
    }

    static func sqlType(of wire: WireType) -> String {
        switch wire {
        case .uuid: "uuid"
        case .text: "text"
        case .bool: "boolean"
        case .int2: "smallint"
        case .int4: "integer"
        case .int8: "bigint"
        case .float4: "real"
        case .float8: "double precision"
        case .numeric: "numeric"
        case .timestamptz: "timestamptz"
        case .bytea: "bytea"
        case .jsonb: "jsonb"
        }
    }

    /// The type of column `index` of `row`, and a review note when it had to be guessed.
    static func sqlType(_ row: RowEncoder.Row, _ index: Int) -> (type: String, note: String?) {
        if let type = sqlType(of: row.values[index]) { return (type, nil) }
        return (
            "text",
            "the type of \(row.properties[index]) is unknown (its stand-in value was nil): column \(row.columns[index]) is drafted as text"
        )
    }

    /// A `-- review:` line: one line, whatever `text` holds.
    static func review(_ text: String) -> String { "-- review: " + OneLine.escape(text) }

    /// Why `name` cannot be a PostgreSQL identifier as it is, if it cannot.
    static func identifierProblem(_ name: String) -> String? {
        for part in name.split(separator: ".", omittingEmptySubsequences: false) {
            if part.utf8.contains(0) { return "'\(name)' holds a NUL character, which no PostgreSQL name can hold; rename it" }
            if part.utf8.count > 63 {
                return "'\(name)' is longer than 63 bytes, which PostgreSQL would cut short (and the model would not find it); shorten it"
            }
        }
        return nil
    }

    /// `name` as a quoted identifier; as a Unicode escape identifier (`U&"a\+00000Ab"`) when it holds a control or
    /// format character or a line break, so a draft holds none of them outside its `-- review:` escapes.
    static func quote(_ name: String) -> String {
        guard name.unicodeScalars.contains(where: OneLine.isUnsafe) else { return SQLIdentifier.quote(name) }
        var out = "U&\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": out += "\"\""
            case "\\": out += "\\\\"
            case _ where OneLine.isUnsafe(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\+" + String(repeating: "0", count: 6 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `"schema"."table"`, each part quoted as ``quote(_:)`` does.
    static func quoteQualified(_ name: String) -> String {
        name.split(separator: ".", omittingEmptySubsequences: false).map { quote(String($0)) }.joined(separator: ".")
    }

    /// A table name without its schema: `stores` for `shop.stores`.
    static func bareName(_ table: String) -> String { table.split(separator: ".").last.map(String.init) ?? table }

    /// The name without its plural `s`: `store` for `stores`.
    static func singular(_ table: String) -> String {
        let name = bareName(table)
        return name.hasSuffix("s") ? String(name.dropLast()) : name
    }
}
