extension OperationPath {
    /// Every mismatch between `models` and the catalog, read afresh (see ``SchemaReport``).
    func schemaReport(for models: [any EntityConvertible.Type]) async throws -> SchemaReport {
        runtime.forgetSchemas()
        return try await perform(Operation(.lookup)) { session in
            var mismatches: [SchemaMismatch] = []
            for model in models { mismatches += try await Self.mismatches(of: model.self, session) }
            return SchemaReport(mismatches: mismatches)
        }
    }

    private static func mismatches<Model: EntityConvertible>(of model: Model.Type, _ session: DatabaseSession) async throws -> [SchemaMismatch] {
        try await SchemaComparison<Model.Entity>().mismatches(session)
    }
}

/// One entity type against its table: the write path's own rules (the row encoder's columns, the value checker's
/// types, the upsert's unique index, the relationships' resolution), applied to a stand-in entity.
struct SchemaComparison<E: EntityProtocol> {
    let entity = "\(E.self)"
    let table = E.table

    func mismatch(_ kind: SchemaMismatch.Kind, property: String? = nil, column: String? = nil, _ message: String) -> SchemaMismatch {
        SchemaMismatch(kind: kind, entity: entity, property: property, table: table, column: column, message: message)
    }

    func mismatches(_ session: DatabaseSession) async throws -> [SchemaMismatch] {
        let schema: TableSchema
        do {
            schema = try await session.schema(of: table, entity: entity)
        } catch let error as StructPostgresError where error.code == .undefinedTable {
            return [mismatch(.missingTable, "table '\(table)' does not exist; create it in a migration")]
        }
        var found: [SchemaMismatch] = []
        let row: RowEncoder.Row
        let optionalKeys: Set<String>
        do {
            let probe = try EntityProbe<E>()
            row = try RowEncoder(naming: E.columnNaming).encode(probe.entity)
            optionalKeys = probe.optionalKeys
        } catch {
            return [mismatch(.uninspectableModel, "\(E.self) could not be made from stand-in values to learn its properties: \(error)")]
        }
        for (index, column) in row.columns.enumerated() {
            let property = row.properties[index]
            guard let info = schema.columns[column] else {
                found.append(mismatch(
                    .missingColumn, property: property, column: column,
                    "property '\(property)' maps to column '\(column)', which table '\(table)' does not have (columns: \(schema.columnOrder.joined(separator: ", ")))"))
                continue
            }
            found += columnMismatches(property: property, column: info, value: row.values[index], optional: optionalKeys.contains(property))
        }
        let written = Set(row.columns)
        for column in schema.columnOrder where !written.contains(column) {
            guard let info = schema.columns[column], info.notNull, !info.hasDefault else { continue }
            found.append(mismatch(
                .unwrittenRequiredColumn, column: column,
                "column '\(column)' is NOT NULL without a default, and \(entity) has no property for it: every insert fails; give it a default, make it nullable, or add the property"))
        }
        found += uniqueKeyMismatches(schema)
        found += await relationshipMismatches(schema, session)
        return found
    }

    private func columnMismatches(property: String, column: TableSchema.Column, value: ColumnValue, optional: Bool) -> [SchemaMismatch] {
        var found: [SchemaMismatch] = []
        if !value.isNull {
            do {
                _ = try ValueChecker(entity: entity, table: table, column: column, property: property, rowKey: { _ in "" }).check([value])
            } catch let error as StructPostgresError {
                found.append(mismatch(.typeMismatch, property: property, column: column.name, error.message))
            } catch {
                found.append(mismatch(.typeMismatch, property: property, column: column.name, "\(error)"))
            }
        }
        if optional && column.notNull {
            found.append(mismatch(
                .optionalOnNotNullColumn, property: property, column: column.name,
                "property '\(property)' is optional but column '\(column.name)' is NOT NULL: writing nil fails; make the property non-optional or the column nullable"))
        } else if !optional && !column.notNull {
            found.append(mismatch(
                .nonOptionalOnNullableColumn, property: property, column: column.name,
                "column '\(column.name)' is nullable but property '\(property)' is not optional: reading a row where it is NULL fails; make the property optional or the column NOT NULL"))
        }
        return found
    }

    private func uniqueKeyMismatches(_ schema: TableSchema) -> [SchemaMismatch] {
        guard let columns = try? E.uniqueKey.map({ try EntityDescription.resolve($0, schema: schema, naming: E.columnNaming, entity: entity) }),
              !columns.isEmpty else { return [] }  // a key property without a column is reported as a missing column
        guard !schema.hasUniqueIndex(on: columns) else { return [] }
        return [mismatch(
            .uniqueKeyWithoutIndex, column: columns.joined(separator: ", "),
            "\(entity).uniqueKey (\(E.uniqueKey.joined(separator: ", "))) has no unique index or primary key on exactly (\(columns.joined(separator: ", "))) in table '\(table)': the upsert's ON CONFLICT needs one")]
    }

    private func relationshipMismatches(_ schema: TableSchema, _ session: DatabaseSession) async -> [SchemaMismatch] {
        guard !E.relationships.isEmpty, let description = try? EntityDescription(E.self, schema: schema) else { return [] }
        var found: [SchemaMismatch] = []
        for relationship in E.relationships {
            let info = relationship.info
            do {
                let resolved = try await session.resolve(info, from: description)
                if let missing = missingConstraint(info, resolved, schema) {
                    found.append(mismatch(.missingForeignKey, property: info.name, column: missing.column, missing.message))
                }
            } catch let error as StructPostgresError {
                found.append(mismatch(.missingForeignKey, property: info.name, column: error.column, error.message))
            } catch {
                found.append(mismatch(.missingForeignKey, property: info.name, "\(error)"))
            }
        }
        return found
    }

    /// A declared link column that resolution accepts without a foreign key constraint behind it.
    private func missingConstraint(
        _ info: RelationshipInfo, _ resolved: ResolvedRelationship, _ schema: TableSchema
    ) -> (column: String, message: String)? {
        switch info.kind {
        case .toOne:
            let target = resolved.target.schema
            guard !schema.foreignKeys.contains(where: { $0.columns == [resolved.sourceColumn] && $0.referencedTable == target.oid }) else { return nil }
            return (resolved.sourceColumn, "relationship '\(info.name)': column '\(resolved.sourceColumn)' of '\(table)' has no foreign key constraint to '\(target.table)'; declare it in a migration")
        case .backReference:
            let target = resolved.target.schema
            guard let column = resolved.targetColumn,
                  !target.foreignKeys.contains(where: { $0.columns == [column] && $0.referencedTable == schema.oid }) else { return nil }
            return (column, "relationship '\(info.name)': column '\(column)' of '\(target.table)' has no foreign key constraint to '\(table)'; declare it in a migration")
        case .through:
            return nil  // resolution already requires a foreign key from the join table to each side
        }
    }
}
