import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession {
    /// Finds the columns that link a relationship's tables, from the declaration and the catalog's foreign keys.
    func resolve<Source: EntityProtocol>(_ relationship: Relationship<Source>) async throws -> ResolvedRelationship {
        try await resolve(relationship.info, from: try await describe(Source.self))
    }

    func resolve(_ relationship: RelationshipInfo, from source: EntityDescription) async throws -> ResolvedRelationship {
        let target = try EntityDescription(
            relationship.target,
            schema: try await schema(of: relationship.target.table, entity: relationship.target.entity))
        let resolver = RelationshipResolver(name: relationship.qualifiedName, source: source, target: target)
        let targetColumns = target.schema.columnOrder.map { "t." + SQLIdentifier.quote($0) }.joined(separator: ", ")
        let order = try relationship.orderedBy.map { try $0.sql(for: target, qualifier: "t.") }
        let orderBy = order.isEmpty ? "" : " ORDER BY " + order.joined(separator: ", ")
        let q = SQLIdentifier.quote

        /// Source rows and target rows linked by a column of each, without a join table. The target's column
        /// is the link value when its type is the source column's (the same bytes); otherwise a cast of it is.
        func direct(source sourceColumn: String, target targetColumn: String, cast: String) throws -> ResolvedRelationship {
            let filter = " FROM \(target.schema.quotedTable) t WHERE t.\(q(targetColumn)) = ANY($1::\(cast)[])\(orderBy)"
            if try resolver.castName(of: targetColumn, in: target.schema) == cast,
                let linkColumn = target.schema.columnOrder.firstIndex(of: targetColumn)
            {
                return ResolvedRelationship(
                    sourceColumn: sourceColumn, targetSQL: "SELECT \(targetColumns)" + filter,
                    linkColumn: linkColumn, targetColumn: targetColumn, join: nil, target: target)
            }
            return ResolvedRelationship(
                sourceColumn: sourceColumn, targetSQL: "SELECT \(targetColumns), t.\(q(targetColumn))::\(cast)" + filter,
                linkColumn: target.schema.columnOrder.count, targetColumn: targetColumn, join: nil, target: target)
        }

        switch relationship.kind {
        case .toOne(let column):
            let link = try resolver.foreignKey(from: source, to: target, column: column, parameter: "column")
            return try direct(source: link.column, target: link.referenced, cast: try resolver.castName(of: link.column, in: source.schema))

        case .backReference(let column):
            let link = try resolver.foreignKey(from: target, to: source, column: column, parameter: "backReference")
            return try direct(
                source: link.referenced, target: link.column, cast: try resolver.castName(of: link.referenced, in: source.schema))

        case .through(let table, let parentColumn, let childColumn, let onRemove):
            let joinSchema = try await schema(of: table, entity: relationship.qualifiedName)
            let join = EntityDescription(joinTable: joinSchema)
            let parent = try resolver.foreignKey(from: join, to: source, column: parentColumn, parameter: "parentColumn")
            let child = try resolver.foreignKey(from: join, to: target, column: childColumn, parameter: "childColumn")
            guard parent.column != child.column else {
                throw resolver.error(
                    "join table '\(table)' links source and target through the same column '\(parent.column)'; name parentColumn: and childColumn:"
                )
            }
            guard joinSchema.hasUniqueIndex(on: [parent.column, child.column]) else {
                throw resolver.error(
                    "join table '\(table)' needs a primary key or unique index on (\(parent.column), \(child.column)) so a link is stored once"
                )
            }
            let cast = try resolver.castName(of: parent.referenced, in: source.schema)
            return ResolvedRelationship(
                sourceColumn: parent.referenced,
                targetSQL: "SELECT \(targetColumns), j.\(q(parent.column))::\(cast) FROM \(joinSchema.quotedTable) j "
                    + "JOIN \(target.schema.quotedTable) t ON t.\(q(child.referenced)) = j.\(q(child.column)) "
                    + "WHERE j.\(q(parent.column)) = ANY($1::\(cast)[])\(orderBy)",
                linkColumn: target.schema.columnOrder.count, targetColumn: nil,
                join: .init(
                    table: table, quotedTable: joinSchema.quotedTable, parentColumn: parent.column, childColumn: child.column,
                    parentType: try resolver.castName(of: parent.column, in: joinSchema),
                    childType: try resolver.castName(of: child.column, in: joinSchema),
                    sourceKey: parent.referenced, targetKey: child.referenced,
                    quotedTargetTable: target.schema.quotedTable, onRemove: onRemove),
                target: target)
        }
    }
}

/// Matches a relationship to foreign keys, with errors that name the relationship and what to declare.
struct RelationshipResolver {
    let name: String
    let source: EntityDescription
    let target: EntityDescription

    /// The column of `from` that references `to`, and the column of `to` it references.
    func foreignKey(
        from: EntityDescription, to: EntityDescription, column: String?, parameter: String
    ) throws -> (column: String, referenced: String) {
        let candidates = from.schema.foreignKeys(to: to.schema.oid)
        if let column {
            let resolved = try from.column(for: column)
            if let key = candidates.first(where: { $0.columns == [resolved] }) {
                return (resolved, key.referencedColumns[0])
            }
            guard to.keyColumns.count == 1 else {
                throw error(
                    "column '\(resolved)' of '\(from.schema.table)' has no foreign key to '\(to.schema.table)', whose unique key has \(to.keyColumns.count) columns; declare the foreign key in a migration"
                )
            }
            return (resolved, to.keyColumns[0])
        }
        switch candidates.count {
        case 1:
            return (candidates[0].columns[0], candidates[0].referencedColumns[0])
        case 0:
            throw error(
                "table '\(from.schema.table)' has no foreign key to '\(to.schema.table)'; declare one in a migration or name the column with \(parameter):"
            )
        default:
            let columns = candidates.map { $0.columns[0] }.joined(separator: ", ")
            throw error(
                "table '\(from.schema.table)' has \(candidates.count) foreign keys to '\(to.schema.table)' (\(columns)); name the one to use with \(parameter):"
            )
        }
    }

    func castName(of column: String, in schema: TableSchema) throws -> String {
        guard let info = schema.columns[column] else {
            throw error("table '\(schema.table)' has no column '\(column)'")
        }
        return info.castName
    }

    func error(_ message: String) -> StructPostgresError {
        StructPostgresError(
            .invalidConfiguration, "relationship \(name): \(message)", entity: source.entity, table: source.schema.table)
    }
}

extension EntityDescription {
    /// A join table, which has no entity: keys are column names or snake_case property names.
    convenience init(joinTable schema: TableSchema) {
        self.init(entity: schema.table, schema: schema, naming: .snakeCase, keyColumns: [], relationships: [])
    }
}
