/// An entity type resolved against its table: which column each key names.
struct EntityDescription: Sendable {
    let entity: String
    let schema: TableSchema
    let naming: ColumnNaming
    let keyColumns: [String]

    init<E: EntityProtocol>(_ type: E.Type, schema: TableSchema) throws {
        self.entity = "\(E.self)"
        self.schema = schema
        self.naming = E.columnNaming
        var keys: [String] = []
        for key in E.uniqueKey {
            keys.append(try Self.resolve(key, schema: schema, naming: E.columnNaming, entity: "\(E.self)"))
        }
        guard !keys.isEmpty else {
            throw StructPostgresError(.invalidConfiguration, "\(E.self).uniqueKey is empty", entity: "\(E.self)", table: E.table)
        }
        self.keyColumns = keys
    }

    /// The column a property name or column name refers to.
    func column(for key: String) throws -> String {
        try Self.resolve(key, schema: schema, naming: naming, entity: entity)
    }

    static func resolve(_ key: String, schema: TableSchema, naming: ColumnNaming, entity: String) throws -> String {
        if schema.columns[key] != nil { return key }
        let converted = naming.column(for: key)
        if schema.columns[converted] != nil { return converted }
        throw StructPostgresError(
            .undefinedColumn,
            "unknown key '\(key)' for \(entity): table '\(schema.table)' has columns \(schema.columnOrder.joined(separator: ", "))",
            entity: entity, table: schema.table, column: converted, property: key)
    }
}
