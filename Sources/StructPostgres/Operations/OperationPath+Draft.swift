extension OperationPath {
    /// The migration that makes the schema match `models`, drafted from their mismatches (see ``MigrationDraft``).
    func draftMigration(for models: [any EntityConvertible.Type]) async throws -> MigrationDraft {
        runtime.forgetSchemas()
        return try await perform(Operation(.lookup)) { session in
            var drafter = MigrationDrafter()
            for model in models { try await Self.draft(model.self, session, &drafter) }
            return drafter.draft
        }
    }

    private static func draft<Model: EntityConvertible>(_ model: Model.Type, _ session: DatabaseSession, _ drafter: inout MigrationDrafter) async throws {
        try await drafter.add(Model.Entity.self, session)
    }
}

/// Collects the DDL of each entity's mismatches; new tables are created referenced ones first, then join tables
/// and the foreign keys of back references.
struct MigrationDrafter {
    struct NewTable {
        let table: String
        let references: Set<String>
        let sql: String
        /// Each column's SQL type.
        let columns: [String: String]
    }

    /// A foreign key of a back reference, added once every table exists.
    struct Link {
        let table: String
        let column: String
        let referenced: String
        let referencedKey: String
        let relationship: String
    }

    /// One side of a join table: its column, and the table and key it references.
    struct JoinSide {
        let column: String
        let table: String
        let key: String
        /// The key's SQL type, when the table exists already.
        let type: String?
    }

    var newTables: [NewTable] = []
    var links: [Link] = []
    var joinTables: [(table: String, parent: JoinSide, child: JoinSide)] = []
    var up: [String] = []
    var down: [String] = []
    var concurrentUp: [String] = []
    var concurrentDown: [String] = []

    mutating func add<E: EntityProtocol>(_ type: E.Type, _ session: DatabaseSession) async throws {
        let mismatches = try await SchemaComparison<E>().mismatches(session)
        let probe = try EntityProbe<E>()
        let row = try RowEncoder(naming: E.columnNaming).encode(probe.entity)
        let newTable = mismatches.contains { $0.kind == .missingTable }
        try await addLinks(E.self, row: row, session)
        guard !mismatches.isEmpty else { return }
        if newTable {
            newTables.append(Self.createTable(E.self, row: row, optional: probe.optionalKeys))
            return
        }
        let q = SQLIdentifier.quote
        let table = SQLIdentifier.quoteQualified(E.table)
        let hasRows = try await session.run(Statement(sql: "SELECT EXISTS (SELECT 1 FROM \(table))")).first?.decode(Bool.self) ?? false
        for mismatch in mismatches {
            switch mismatch.kind {
            case .missingColumn:
                guard let property = mismatch.property, let index = row.properties.firstIndex(of: property) else { continue }
                let required = !probe.optionalKeys.contains(property)
                up.append("ALTER TABLE \(table) ADD COLUMN \(Self.definition(row, index, notNull: required && !hasRows));")
                if required && hasRows {
                    up.append("-- review: \(table).\(q(row.columns[index])) is NULL in the rows already there; fill it in, then SET NOT NULL (\(E.self).\(property) is not optional)")
                }
                down.append("-- review: ALTER TABLE \(table) DROP COLUMN \(q(row.columns[index])); (loses its values)")
            case .uniqueKeyWithoutIndex:
                guard let columns = mismatch.column?.components(separatedBy: ", ") else { continue }
                let name = q(Self.bareName(E.table) + "_" + columns.joined(separator: "_") + "_key")
                concurrentUp.append("CREATE UNIQUE INDEX CONCURRENTLY \(name) ON \(table) (\(columns.map(q).joined(separator: ", ")));")
                concurrentDown.append("-- review: DROP INDEX CONCURRENTLY \(name); (upserts of \(E.self) need it)")
            case .missingForeignKey where E.relationships.contains { $0.info.name == mismatch.property && $0.info.kind.isToMany }:
                continue  // drafted by addLinks
            default:
                up.append("-- review: \(mismatch)")
            }
        }
    }

    /// The SQL type a write of `value` stores: the table the drafts and the checks share (see *Migrations*).
    static func sqlType(of value: ColumnValue) -> String? {
        guard let wire = value.wireType else { return nil }
        let base = switch wire {
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
        return value.isArray ? base + "[]" : base
    }

    static func definition(_ row: RowEncoder.Row, _ index: Int, notNull: Bool) -> String {
        let type = sqlType(of: row.values[index]) ?? "text /* review: the type of \(row.properties[index]) is unknown */"
        return "\(SQLIdentifier.quote(row.columns[index])) \(type)" + (notNull ? " NOT NULL" : "")
    }

    /// A table name without its schema: `stores` for `shop.stores`.
    static func bareName(_ table: String) -> String { table.split(separator: ".").last.map(String.init) ?? table }

    /// The name without its plural `s`: `store` for `stores`.
    static func singular(_ table: String) -> String {
        let name = bareName(table)
        return name.hasSuffix("s") ? String(name.dropLast()) : name
    }

    /// `CREATE TABLE` with every column the entity writes, its unique key as the primary key, and the foreign keys
    /// of its to-one relationships.
    static func createTable<E: EntityProtocol>(_ type: E.Type, row: RowEncoder.Row, optional: Set<String>) -> NewTable {
        let q = SQLIdentifier.quote
        let keyColumns = E.uniqueKey.map { E.columnNaming.column(for: $0) }
        var lines = row.columns.indices.map { index in
            "    " + definition(row, index, notNull: keyColumns.contains(row.columns[index]) || !optional.contains(row.properties[index]))
        }
        lines.append("    PRIMARY KEY (\(keyColumns.map(q).joined(separator: ", ")))")
        var references: Set<String> = []
        var notes: [String] = []
        for relationship in E.relationships {
            let info = relationship.info
            guard case .toOne(let declared) = info.kind else { continue }
            let candidates = [declared, info.name + "ID", info.name + "Id"].compactMap { $0 }.map { E.columnNaming.column(for: $0) }
            guard let column = candidates.first(where: row.columns.contains) else {
                notes.append("-- review: relationship '\(info.name)' of \(E.self): no column found for its foreign key; name it with column:")
                continue
            }
            let targetKey = info.target.uniqueKey.map { info.target.naming.column(for: $0) }
            lines.append("    FOREIGN KEY (\(q(column))) REFERENCES \(SQLIdentifier.quoteQualified(info.target.table)) (\(targetKey.map(q).joined(separator: ", ")))")
            references.insert(info.target.table)
        }
        let sql = "CREATE TABLE \(SQLIdentifier.quoteQualified(E.table)) (\n" + lines.joined(separator: ",\n") + "\n);"
        var columns: [String: String] = [:]
        for (index, column) in row.columns.enumerated() { columns[column] = sqlType(of: row.values[index]) }
        return NewTable(table: E.table, references: references, sql: (notes + [sql]).joined(separator: "\n"), columns: columns)
    }
}
