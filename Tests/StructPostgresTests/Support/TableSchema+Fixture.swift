@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

extension TableSchema {
    /// A table keyed by `uuid`, as the catalog would describe it, for tests without a server. Each column is given
    /// as its name, type name, base type and category (`"U"` uuid, `"S"` text, `"N"` numeric, ...).
    static func fixture(
        _ table: String, quotedTable: String? = nil, _ columns: [(name: String, type: String, base: String, category: Character)]
    ) -> TableSchema {
        let described = columns.map {
            var column = Column(
                name: $0.name, typeName: $0.type, baseName: $0.base, category: $0.category, maxLength: nil, numericPrecision: nil,
                castName: $0.type)
            if $0.category == "A" { column.elementCategory = elementCategory(String($0.base.dropFirst())) }
            return column
        }
        return TableSchema(
            table: table, quotedTable: quotedTable ?? "\"\(table)\"",
            columns: Dictionary(uniqueKeysWithValues: described.map { ($0.name, $0) }),
            columnOrder: described.map(\.name), uniqueKeys: [.init(columns: ["uuid"], nullsNotDistinct: false)])
    }

    /// `pg_type.typcategory` of a base type, as the catalog has it.
    private static func elementCategory(_ base: String) -> Character {
        switch base {
        case "text", "varchar", "bpchar", "name": "S"
        case "int2", "int4", "int8", "float4", "float8", "numeric": "N"
        case "bool": "B"
        case "timestamptz", "timestamp", "date": "D"
        default: "U"
        }
    }
}
