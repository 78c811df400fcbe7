import PostgresNIO

extension DatabaseSession {
    /// Writes a batch of one table with one statement:
    /// `INSERT ... SELECT ... FROM unnest($1::uuid[], ...) ON CONFLICT (key) DO UPDATE ...`.
    func upsert<E: EntityProtocol>(_ entities: [E], options: UpsertOptions) async throws -> UpsertResult {
        guard !entities.isEmpty else { return UpsertResult() }
        let description = try await describe(E.self)
        let batch = try BatchColumns(entities, description: description)
        let statement = try Self.upsertStatement(batch, description: description, options: options)
        let rows: [PostgresRow]
        do {
            rows = try await run(statement)
        } catch let error as StructPostgresError {
            throw Self.explainMissingReference(error.with(entity: description.entity, table: description.schema.table), E.self, description, batch)
        }
        let (inserted, changed) = try rows[0].decode((Int64, Int64).self)
        var result = UpsertResult(inserted: Int(inserted), merged: batch.merged)
        if options.conflict == .ignore {
            result.skipped = batch.rowCount - Int(inserted)
        } else {
            result.updated = Int(changed)
        }
        return result
    }

    static func upsertStatement(
        _ batch: BatchColumns, description: EntityDescription, options: UpsertOptions
    ) throws -> Statement {
        let schema = description.schema
        let keys = description.keyColumns
        guard schema.hasUniqueIndex(on: keys) else {
            throw StructPostgresError(
                .invalidConfiguration,
                "\(description.entity).uniqueKey is (\(keys.joined(separator: ", "))), but table '\(schema.table)' has no unique index or primary key on exactly those columns",
                entity: description.entity, table: schema.table)
        }
        var statement = Statement(sql: "")
        var parameters: [String] = []
        var selected: [String] = []
        for column in batch.columns {
            let parameter = statement.bind(array: BinaryColumnArray(element: column.arrayType, values: column.values))
            parameters.append("\(parameter)::\(column.arrayType.sqlName)[]")
            let reference = "u.\(SQLIdentifier.quote(column.name))"
            selected.append(column.needsCast ? "\(reference)::\(column.info.castName)" : reference)
        }
        let names = batch.columns.map { SQLIdentifier.quote($0.name) }
        let quotedKeys = keys.map(SQLIdentifier.quote).joined(separator: ", ")
        let conflict: String
        switch options.conflict {
        case .ignore:
            conflict = "DO NOTHING"
        case .updateAll, .update:
            var updated = batch.columns.map(\.name).filter { !keys.contains($0) }
            if case .update(let chosen) = options.conflict {
                updated = try chosen.map { try description.column(for: $0) }
                for column in updated where !batch.columns.contains(where: { $0.name == column }) {
                    throw StructPostgresError(
                        .undefinedColumn, "column '\(column)' chosen for update is not encoded by \(description.entity)",
                        entity: description.entity, table: schema.table, column: column)
                }
            }
            if updated.isEmpty { updated = [keys[0]] }
            let assignments = updated.map { "\(SQLIdentifier.quote($0)) = EXCLUDED.\(SQLIdentifier.quote($0))" }
            conflict = "DO UPDATE SET " + assignments.joined(separator: ", ")
        }
        statement.sql = """
            WITH upserted AS (INSERT INTO \(schema.quotedTable) AS t (\(names.joined(separator: ", "))) \
            SELECT \(selected.joined(separator: ", ")) FROM unnest(\(parameters.joined(separator: ", "))) AS u(\(names.joined(separator: ", "))) \
            ON CONFLICT (\(quotedKeys)) \(conflict) RETURNING (t.xmax = 0) AS inserted) \
            SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM upserted
            """
        return statement
    }

    /// A foreign-key violation of an upsert means a referenced row exists neither in the batch nor in the
    /// database: name the relationship (or column), the missing key, and that nothing was written.
    static func explainMissingReference<E: EntityProtocol>(
        _ error: StructPostgresError, _ type: E.Type, _ description: EntityDescription, _ batch: BatchColumns
    ) -> StructPostgresError {
        guard error.code == .foreignKeyViolation,
              let key = description.schema.foreignKeys.first(where: { $0.name == error.constraint }),
              key.columns.count == 1
        else { return error }
        var explained = error
        let column = key.columns[0]
        explained.column = column
        explained.property = batch.columns.first { $0.name == column }?.property
        let relationship = E.relationships.first { relationship in
            guard case .toOne(let declared) = relationship.kind else { return false }
            if let declared {
                return (try? description.column(for: declared)) == column
            }
            return relationship.target.table.split(separator: ".").last == key.referencedTableName.split(separator: ".").last
        }
        explained.relationship = relationship?.qualifiedName
        let subject = relationship.map { "relationship \($0.qualifiedName)" } ?? "column '\(description.schema.table).\(column)'"
        let missing = error.foreignKey ?? "the key"
        explained.message = "\(subject): \(missing) is neither in this batch nor in table '\(key.referencedTableName)'; nothing was written"
        return explained
    }
}
