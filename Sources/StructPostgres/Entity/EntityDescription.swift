import StructPostgresCore
import StructPostgresDriver

/// An entity type resolved against its table: which column each key names. A class: every call passes its
/// entity's description along (filters, plans, decoders), and a copy is then one reference, not a dozen.
final class EntityDescription: Sendable {
    let entity: String
    let schema: TableSchema
    let naming: ColumnNaming
    let keyColumns: [String]
    /// The column of ``EntityProtocol/versionKey``; `nil` for an entity without a version.
    let versionColumn: String?
    let relationships: [RelationshipInfo]
    /// The order the entity's `init(from:)` asks for its keys in a select of every column, learnt once.
    let keyOrder = LearntKeyOrder()

    convenience init<E: EntityProtocol>(_ type: E.Type, schema: TableSchema) throws {
        try self.init(TargetInfo(E.self), schema: schema)
    }

    init(
        entity: String, schema: TableSchema, naming: ColumnNaming, keyColumns: [String], versionColumn: String? = nil,
        relationships: [RelationshipInfo]
    ) {
        self.entity = entity
        self.schema = schema
        self.naming = naming
        self.keyColumns = keyColumns
        self.versionColumn = versionColumn
        self.relationships = relationships
    }

    init(_ info: TargetInfo, schema: TableSchema) throws {
        self.entity = info.entity
        self.schema = schema
        self.naming = info.naming
        self.relationships = info.relationships()
        var keys: [String] = []
        for key in info.uniqueKey {
            keys.append(try Self.resolve(key, schema: schema, naming: info.naming, entity: info.entity))
        }
        guard !keys.isEmpty else {
            throw StructPostgresError(.invalidConfiguration, "\(info.entity).uniqueKey is empty", entity: info.entity, table: info.table)
        }
        self.keyColumns = keys
        versionColumn = try info.versionKey.map { key in
            let column = try Self.resolve(key, schema: schema, naming: info.naming, entity: info.entity)
            guard !keys.contains(column) else {
                throw StructPostgresError(
                    .invalidConfiguration,
                    "\(info.entity).versionKey '\(key)' is part of its uniqueKey; a version must be a column of its own",
                    entity: info.entity, table: info.table, column: column)
            }
            return column
        }
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
