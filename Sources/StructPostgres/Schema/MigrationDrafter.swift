import StructPostgresCore
import StructPostgresDriver

/// Collects the DDL of each entity's mismatches. New tables are created referenced ones first (a foreign key whose
/// table comes later, as in a cycle, is added once both exist), then join tables, the changes of existing tables,
/// and last the foreign keys added to tables that already exist or were just created.
///
/// Everything taken from outside (names from the catalog or the coding keys, messages quoting them) is written so
/// that it cannot leave its place: identifiers quoted, and as Unicode escapes (`U&"a\+00000Ab"`) when they hold a
/// control character; `-- review:` lines on one line, every control character escaped.
struct MigrationDrafter {
    /// A foreign key the draft adds.
    struct ForeignKey: Hashable {
        let table: String
        let column: String
        let referenced: String
        let referencedKey: [String]
    }

    /// A table the draft creates.
    struct NewTable {
        struct Column {
            let name: String
            let type: String
            let notNull: Bool
            /// The column's `DEFAULT`: `1` for a version column.
            var defaultValue: String? = nil
        }
        let table: String
        let columns: [Column]
        let key: [String]
        /// The key is the primary key; a key with an optional property is a `UNIQUE` constraint instead.
        let keyIsPrimary: Bool
        /// Its to-one relationships' foreign keys: in `CREATE TABLE` when the referenced table exists by then.
        let foreignKeys: [ForeignKey]
        let notes: [String]

        func type(of column: String) -> String? { columns.first { $0.name == column }?.type }
    }

    /// One side of a join table: its column, and the table and key it references.
    struct JoinSide {
        let column: String
        let table: String
        let key: String
        /// The key's SQL type, when the table exists already.
        let type: String?
    }

    struct JoinTable {
        let table: String
        let relationship: String
        let parent: JoinSide
        let child: JoinSide
    }

    /// A to-one relationship's foreign key.
    struct ToOne {
        let name: String
        let key: ForeignKey
    }

    /// A foreign key a relationship needs on a table that exists or that another model creates: decided once every
    /// model is known.
    struct WantedKey {
        let key: ForeignKey
        let relationship: String
        /// How to name the column when it is missing: `backReference:` or `column:`.
        let naming: String
    }

    var drafted: Set<ObjectIdentifier> = []
    var newTables: [NewTable] = []
    var joinTables: [JoinTable] = []
    var wanted: [WantedKey] = []
    /// The tables that exist, with their columns (and the ones the draft adds).
    var existing: [String: Set<String>] = [:]
    var up: [String] = []
    var down: [String] = []
    var concurrentUp: [String] = []
    var concurrentDown: [String] = []

    mutating func add<E: EntityProtocol>(_ type: E.Type, _ session: DatabaseSession) async throws {
        guard drafted.insert(ObjectIdentifier(E.self)).inserted else { return }  // a model listed twice
        let comparison = SchemaComparison<E>()
        let (row, optional): (RowEncoder.Row, Set<String>)
        do throws(SchemaComparison<E>.Uninspectable) {
            (row, optional) = try comparison.probe()
        } catch {
            throw StructPostgresError(
                .schemaMismatch, SchemaReport(mismatches: [error.mismatch]).description, entity: "\(E.self)", table: E.table)
        }
        let mismatches = try await comparison.mismatches(session)
        let schema = try? await session.schema(of: E.table, entity: "\(E.self)")
        if let schema { existing[E.table, default: []].formUnion(schema.columnOrder) }
        try await addLinks(E.self, row: row, session)
        let toOnes = try await addToOnes(E.self, row: row, schema: schema, session)
        guard let schema else {
            newTables.append(Self.createTable(E.self, row: row, optional: optional, foreignKeys: toOnes))
            return
        }
        guard !mismatches.isEmpty else { return }
        let table = Self.quoteQualified(E.table)
        let hasRows =
            try await session.run(Statement(sql: "SELECT EXISTS (SELECT 1 FROM \(schema.quotedTable))")).first?.decode(Bool.self) ?? false
        for mismatch in mismatches {
            switch mismatch.kind {
            case .missingColumn:
                guard let property = mismatch.property, let index = row.properties.firstIndex(of: property) else { continue }
                let column = row.columns[index]
                if let problem = Self.identifierProblem(column) {
                    up.append(Self.review("\(E.self).\(property): \(problem)"))
                    continue
                }
                if Self.isVersion(E.self, column: column, property: property) {
                    // The default fills the rows already there: they start at version 1.
                    up.append("ALTER TABLE \(table) ADD COLUMN \(Self.quote(column)) \(Self.versionType);")
                    existing[E.table, default: []].insert(column)
                    down.append(
                        Self.review("ALTER TABLE \(table) DROP COLUMN \(Self.quote(column)); (writes of \(E.self) stop being conditional)"))
                    continue
                }
                let required = !optional.contains(property)
                let (type, note) = Self.sqlType(row, index)
                if let note { up.append(Self.review(note)) }
                up.append("ALTER TABLE \(table) ADD COLUMN \(Self.quote(column)) \(type)\(required && !hasRows ? " NOT NULL" : "");")
                existing[E.table, default: []].insert(column)
                if required && hasRows {
                    up.append(
                        Self.review(
                            "\(E.table).\(column) is NULL in the rows already there; fill it in, then SET NOT NULL (\(E.self).\(property) is not optional)"
                        ))
                }
                down.append(Self.review("ALTER TABLE \(table) DROP COLUMN \(Self.quote(column)); (loses its values)"))
            case .uniqueKeyWithoutIndex:
                guard let columns = mismatch.column?.components(separatedBy: ", ") else { continue }
                let name = Self.quote(Self.bareName(E.table) + "_" + columns.joined(separator: "_") + "_key")
                concurrentUp.append(
                    "CREATE UNIQUE INDEX CONCURRENTLY \(name) ON \(table) (\(columns.map(Self.quote).joined(separator: ", ")));")
                concurrentDown.append(Self.review("DROP INDEX CONCURRENTLY \(name); (upserts of \(E.self) need it)"))
            case .missingForeignKey where E.relationships.contains { $0.info.name == mismatch.property && $0.info.kind.isToMany }:
                continue  // drafted by addLinks
            case .missingForeignKey where toOnes.contains { $0.name == mismatch.property }:
                continue  // drafted by addToOnes
            case .nonOptionalOnNullableColumn
            where mismatch.column
                == (try? EntityDescription.resolve(E.versionKey ?? "", schema: schema, naming: E.columnNaming, entity: "\(E.self)")):
                continue  // drafted with the version column's other needs
            case .versionColumn:
                guard let state = try await comparison.versionColumnState(schema, session, row: row) else {
                    up.append(Self.review(mismatch.description))
                    continue
                }
                up += Self.alterVersionColumn(state, table: table, type: E.self)
            default:
                up.append(Self.review(mismatch.description))
            }
        }
    }
}
