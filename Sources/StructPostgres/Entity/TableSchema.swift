import StructPostgresCore
import StructPostgresDriver

/// A table's columns and unique keys as the catalog describes them, loaded once per service.
struct TableSchema: Sendable {
    struct Column: Sendable {
        let name: String
        /// As `format_type` prints it: `integer`, `character varying(20)`, `text[]`.
        let typeName: String
        /// `pg_type.typname` of the column's type: `int4`, `varchar`, `_text`.
        let baseName: String
        /// `pg_type.typcategory`: `S` string, `N` numeric, `A` array, `E` enum, ...
        let category: Character
        /// The declared length of `varchar(n)` / `char(n)`.
        let maxLength: Int?
        /// The declared precision and scale of `numeric(p, s)`.
        let numericPrecision: (precision: Int, scale: Int)?
        /// The type without its modifier (`character varying[]`), for casts: a cast to `varchar(5)`
        /// would silently truncate, while the assignment to the column refuses a value too long.
        let castName: String
        /// Declared `NOT NULL`.
        var notNull = false
        /// Filled by the server when an insert leaves it out: a default, an identity or a generated column.
        var hasDefault = false
        /// `pg_type.typcategory` of an array's element type (`N` for `integer[]`); `nil` for a column that is not
        /// an array.
        var elementCategory: Character?
        /// How the server fills the column whatever a write says, when it refuses a written value: a `GENERATED
        /// ALWAYS AS (...) STORED` column, or `GENERATED ALWAYS AS IDENTITY`.
        var generatedAlways: GeneratedAlways?

        /// A column the server fills, which refuses every value a write gives it.
        enum GeneratedAlways: Sendable {
            case stored, identity

            /// The column's declaration, for messages.
            var declaration: String {
                switch self {
                case .stored: "GENERATED ALWAYS AS (...) STORED"
                case .identity: "GENERATED ALWAYS AS IDENTITY"
                }
            }
        }

        var isArray: Bool { category == "A" }

        /// An array column's element, described as a column of its own (`integer` for `integer[]`), so that the
        /// rules for one value apply to each element.
        var element: Column? {
            guard isArray, let elementCategory else { return nil }
            let elementType = typeName.hasSuffix("[]") ? String(typeName.dropLast(2)) : typeName
            let elementCast = castName.hasSuffix("[]") ? String(castName.dropLast(2)) : castName
            return Column(
                name: name, typeName: elementType, baseName: String(baseName.dropFirst()), category: elementCategory,
                maxLength: maxLength, numericPrecision: numericPrecision, castName: elementCast)
        }

        /// Whether the column holds whole numbers only: `smallint`, `integer`, `bigint`.
        var isInteger: Bool { ["int2", "int4", "int8"].contains(baseName) }

        /// What a filter compares when it counts (`reviews.@count`): a `bigint` that is not a column.
        static func count(named name: String) -> Column {
            Column(
                name: name, typeName: "bigint", baseName: "int8", category: "N", maxLength: nil, numericPrecision: nil, castName: "bigint")
        }
        /// The wire type named like the column's type (`uuid`, `int8`, `jsonb`...), if there is one.
        var naturalWire: WireType? { WireType(rawValue: baseName) }
        var isStringLike: Bool { category == "S" }
        /// Whether values of the type can be compared with `=` (json, xml and geometric types cannot).
        var hasEquality: Bool {
            let element = isArray ? String(baseName.dropFirst()) : baseName
            return !["json", "xml", "point", "line", "lseg", "box", "path", "polygon", "circle"].contains(element)
        }

        /// Whether a value travelling as `wire` fits this column; text and JSON depend on the use (a write lets
        /// the server convert text, a comparison is stricter), so the caller says.
        func accepts(_ wire: WireType, text: Bool, json: Bool) -> Bool {
            switch wire {
            case .text: text
            case .jsonb: json
            case .uuid: baseName == "uuid" || isStringLike
            case .bool: baseName == "bool"
            case .int2, .int4, .int8, .float4, .float8, .numeric: category == "N"
            case .timestamptz: ["timestamptz", "timestamp", "date"].contains(baseName)
            case .bytea: baseName == "bytea"
            }
        }
    }

    let table: String
    let quotedTable: String
    /// The table's `pg_class` oid.
    var oid: Int64 = 0
    /// The table's foreign keys.
    var foreignKeys: [ForeignKey] = []
    /// The service's ``CatalogCache/generation`` when the catalog was read: what was read before the
    /// schema cache was last forgotten is never cached.
    var generation = 0
    /// The oids of the tables this table's foreign keys reference (itself excluded).
    var referencedTables: Set<Int64> { Set(foreignKeys.map(\.referencedTable)).subtracting([oid]) }
    /// Whether a foreign key of the table references the table itself.
    var referencesItself: Bool { foreignKeys.contains { $0.referencedTable == oid } }
    let columns: [String: Column]
    let columnOrder: [String]
    /// `SELECT <every column in catalog order> FROM <table>`, built once: every fetch starts with it.
    let selectAll: String
    /// Each column's position in ``columnOrder``: the result layout of ``selectAll``.
    let columnIndexes: [String: Int]
    /// A unique index (or the primary key) of whole columns.
    struct UniqueKey: Sendable {
        let columns: [String]
        /// Declared `NULLS NOT DISTINCT` (PostgreSQL 15 and later): a NULL matches a NULL.
        let nullsNotDistinct: Bool
    }

    /// The table's unique indexes (the primary key included).
    let uniqueKeys: [UniqueKey]

    init(table: String, quotedTable: String, columns: [String: Column], columnOrder: [String], uniqueKeys: [UniqueKey]) {
        self.table = table
        self.quotedTable = quotedTable
        self.columns = columns
        self.columnOrder = columnOrder
        self.uniqueKeys = uniqueKeys
        selectAll = "SELECT \(columnOrder.map(SQLIdentifier.quote).joined(separator: ", ")) FROM \(quotedTable)"
        columnIndexes = Dictionary(uniqueKeysWithValues: columnOrder.enumerated().map { ($1, $0) })
    }

    func hasUniqueIndex(on key: [String]) -> Bool {
        uniqueKeys.contains { Set($0.columns) == Set(key) }
    }

    /// Whether rows whose `key` holds NULLs conflict with each other: ON CONFLICT on `key` takes every unique
    /// index on those columns as arbiter, so one declared `NULLS NOT DISTINCT` makes them match.
    func nullsMatch(in key: [String]) -> Bool {
        uniqueKeys.contains { Set($0.columns) == Set(key) && $0.nullsNotDistinct }
    }

    static let columnsSQL = """
        SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), format_type(a.atttypid, NULL),
               t.typname::text, t.typcategory::text, a.atttypmod, a.attnotnull,
               a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '',
               coalesce(e.typcategory::text, ''), a.attgenerated::text, a.attidentity::text
        FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
        LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
        WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum
        """

    /// A foreign key constraint: `columns` of this table reference `referencedColumns` of another (or the same) table.
    struct ForeignKey: Sendable {
        let name: String
        let columns: [String]
        let referencedTable: Int64
        /// As `regclass` prints it: schema-qualified only when not on the search path.
        let referencedTableName: String
        let referencedColumns: [String]
        /// `pg_constraint.confdeltype`: `a` no action, `r` restrict, `c` cascade, `n` set null, `d` set default.
        let onDelete: Character
    }

    /// The single-column foreign keys of this table that reference `table`.
    func foreignKeys(to table: Int64) -> [ForeignKey] {
        foreignKeys.filter { $0.referencedTable == table && $0.columns.count == 1 }
    }

    static let foreignKeysSQL = """
        SELECT c.conname::text, c.confrelid::int8, c.confdeltype::text, c.confrelid::regclass::text,
               ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(n, i)
                     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i),
               ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(n, i)
                     JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i)
        FROM pg_constraint c
        WHERE c.conrelid = $1::oid AND c.contype = 'f'
        ORDER BY c.conname
        """

    /// `indnullsnotdistinct` is read through `to_jsonb`, which yields NULL where the column does not exist (before 15).
    static let uniqueKeysSQL = """
        SELECT ARRAY(SELECT a.attname::text FROM unnest(i.indkey[0:i.indnkeyatts - 1]) AS k(n)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n),
               coalesce((to_jsonb(i) ->> 'indnullsnotdistinct')::boolean, false)
        FROM pg_index i
        WHERE i.indrelid = $1::oid AND i.indisunique AND i.indpred IS NULL AND i.indimmediate AND i.indisvalid
          AND NOT (0 = ANY (i.indkey[0:i.indnkeyatts - 1]))
        """
}

/// `"schema"."table"` from `schema.table`, each part quoted.
enum SQLIdentifier {
    static func quote(_ name: String) -> String {
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func quoteQualified(_ name: String) -> String {
        name.split(separator: ".", omittingEmptySubsequences: false).map { quote(String($0)) }.joined(separator: ".")
    }
}
