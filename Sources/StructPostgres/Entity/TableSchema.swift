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

        var isArray: Bool { category == "A" }
        var isStringLike: Bool { category == "S" }
    }

    let table: String
    let quotedTable: String
    /// The table's `pg_class` oid.
    var oid: Int64 = 0
    /// The oids of the tables this table's foreign keys reference (itself excluded).
    var referencedTables: Set<Int64> = []
    let columns: [String: Column]
    let columnOrder: [String]
    /// Column sets of the table's unique indexes (the primary key included).
    let uniqueKeys: [[String]]

    func hasUniqueIndex(on key: [String]) -> Bool {
        uniqueKeys.contains { Set($0) == Set(key) }
    }

    static let columnsSQL = """
        SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), format_type(a.atttypid, NULL),
               t.typname::text, t.typcategory::text, a.atttypmod
        FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
        WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum
        """

    static let referencedTablesSQL = """
        SELECT DISTINCT confrelid::int8 FROM pg_constraint
        WHERE conrelid = $1::oid AND contype = 'f' AND confrelid <> conrelid
        """

    static let uniqueKeysSQL = """
        SELECT ARRAY(SELECT a.attname::text FROM unnest(i.indkey[0:i.indnkeyatts - 1]) AS k(n)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n)
        FROM pg_index i
        WHERE i.indrelid = $1::oid AND i.indisunique AND i.indpred IS NULL AND i.indimmediate AND i.indisvalid
          AND NOT (0 = ANY (i.indkey[0:i.indnkeyatts - 1]))
        """
}

/// `"schema"."table"` from `schema.table`, each part quoted.
enum SQLIdentifier {
    static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func quoteQualified(_ name: String) -> String {
        name.split(separator: ".", omittingEmptySubsequences: false).map { quote(String($0)) }.joined(separator: ".")
    }
}
