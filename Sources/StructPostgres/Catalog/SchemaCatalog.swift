import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession {
    /// The entity resolved against its table, from the catalog on first use.
    func describe<E: EntityProtocol>(_ type: E.Type) async throws -> EntityDescription {
        if let known = context.catalog.description(ObjectIdentifier(E.self)) { return known }
        let schema = try await schema(of: E.table, entity: "\(E.self)")
        let description = try EntityDescription(E.self, schema: schema)
        context.catalog.store(description, for: ObjectIdentifier(E.self))
        return description
    }

    /// Precision and scale of a `numeric(p, s)` type modifier; the scale is an 11-bit signed number.
    static func numericPrecision(_ typmod: Int32) -> (Int, Int) {
        let bits = Int(typmod - 4)
        return ((bits >> 16) & 0xffff, ((bits & 0x7ff) ^ 1024) - 1024)
    }

    func schema(of table: String, entity: String) async throws -> TableSchema {
        if let known = context.catalog.schema(table) { return known }
        let generation = context.catalog.generation
        let quoted = SQLIdentifier.quoteQualified(table)
        var lookup = Statement(sql: "SELECT to_regclass($1)::oid::int8")
        lookup.append(.text(quoted))
        let found = try await run(lookup)
        guard let oidCell = found.first?.makeRandomAccess()[0], oidCell.bytes != nil else {
            throw StructPostgresError(
                .undefinedTable, "table '\(table)' of entity \(entity) does not exist",
                sqlState: SQLState.undefinedTable, entity: entity, table: table)
        }
        let oid = try oidCell.decode(Int64.self)
        var columnsQuery = Statement(sql: TableSchema.columnsSQL)
        columnsQuery.append(.int8(oid))
        var columns: [String: TableSchema.Column] = [:]
        var order: [String] = []
        for row in try await run(columnsQuery) {
            let (name, typeName, castName, baseName, category, typmod, notNull, hasDefault, elementCategory, generated, identity) =
                try row.decode((String, String, String, String, String, Int32, Bool, Bool, String, String, String).self)
            let hasLength = ["varchar", "bpchar", "_varchar", "_bpchar"].contains(baseName) && typmod > 4
            let hasPrecision = ["numeric", "_numeric"].contains(baseName) && typmod > 4
            columns[name] = .init(
                name: name, typeName: typeName, baseName: baseName, category: category.first ?? "X",
                maxLength: hasLength ? Int(typmod - 4) : nil,
                numericPrecision: hasPrecision ? Self.numericPrecision(typmod) : nil,
                castName: baseName == "bpchar" ? "bpchar" : baseName == "_bpchar" ? "bpchar[]" : castName,
                notNull: notNull, hasDefault: hasDefault, elementCategory: elementCategory.first,
                generatedAlways: generated == "s" ? .stored : identity == "a" ? .identity : nil)
            order.append(name)
        }
        var keysQuery = Statement(sql: TableSchema.uniqueKeysSQL)
        keysQuery.append(.int8(oid))
        let keys = try await run(keysQuery).map { row in
            let access = row.makeRandomAccess()
            return TableSchema.UniqueKey(columns: try [String].decode(access[0]), nullsNotDistinct: try access[1].decode(Bool.self))
        }
        var foreignKeysQuery = Statement(sql: TableSchema.foreignKeysSQL)
        foreignKeysQuery.append(.int8(oid))
        let foreignKeys = try await run(foreignKeysQuery).map { row in
            let access = row.makeRandomAccess()
            return TableSchema.ForeignKey(
                name: try access[0].decode(String.self), columns: try [String].decode(access[4]),
                referencedTable: try access[1].decode(Int64.self), referencedTableName: try access[3].decode(String.self),
                referencedColumns: try [String].decode(access[5]),
                onDelete: try access[2].decode(String.self).first ?? "a")
        }
        var schema = TableSchema(table: table, quotedTable: quoted, columns: columns, columnOrder: order, uniqueKeys: keys)
        schema.oid = oid
        schema.foreignKeys = foreignKeys
        schema.generation = generation
        context.catalog.store(schema)
        return schema
    }
}
