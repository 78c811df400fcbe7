import StructPostgresCore
import StructPostgresDriver

/// The SQL of upserts, and what their errors mean.
enum UpsertSQL {
    /// The text of an upsert of `batch`: `INSERT ... SELECT ... FROM unnest(...)`, or `INSERT ... VALUES` for one
    /// row, `ON CONFLICT` on the entity's unique key, `DO UPDATE` only where a value differs, counting what it did.
    /// `reportsRows`: instead of counts, the place in the batch (from 1) of each row written and whether it was
    /// inserted. Either way the rows are written in key order, so that concurrent batches over the same rows lock them
    /// in the same order and wait for each other instead of deadlocking.
    static func text(_ batch: BatchColumns, description: EntityDescription, options: UpsertOptions, reportsRows: Bool = false) throws
        -> String
    {
        let schema = description.schema
        let keys = description.keyColumns
        try requireUniqueIndex(description)
        var parameters: [String] = []
        var selected: [String] = []
        for (index, column) in batch.columns.enumerated() {
            parameters.append("$\(index + 1)::\(column.arrayType.sqlName)[]")
            let reference = batch.rowCount == 1 ? "$\(index + 1)" : "u.\(SQLIdentifier.quote(column.name))"
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
                updated = try chosenColumns(chosen, batch, description)
            }
            if updated.isEmpty { updated = [keys[0]] }
            let assignments = updated.map { "\(SQLIdentifier.quote($0)) = EXCLUDED.\(SQLIdentifier.quote($0))" }
            conflict = "DO UPDATE SET " + assignments.joined(separator: ", ") + " WHERE " + changedCondition(updated, schema)
        }
        if batch.rowCount == 1 {
            return """
                INSERT INTO \(schema.quotedTable) AS t (\(names.joined(separator: ", "))) VALUES (\(selected.joined(separator: ", "))) \
                ON CONFLICT (\(quotedKeys)) \(conflict) RETURNING (t.xmax = 0) AS inserted
                """
        }
        // The keys as stored (cast to the columns' own types, with their modifiers). Rows are written in key order, so
        // that batches over the same rows lock them in the same order and wait for each other instead of deadlocking.
        let stored = keys.compactMap { key in
            batch.columns.firstIndex { $0.name == key }.map { "CAST(\(selected[$0]) AS \(batch.columns[$0].info.castName))" }
        }
        if reportsRows {
            // Each written row's place is found by its stored key; of places whose keys PostgreSQL holds equal, the
            // first written row goes to the first.
            let written = keys.map { "w.\(SQLIdentifier.quote($0))" }
            let equal = schema.nullsMatch(in: keys) ? "IS NOT DISTINCT FROM" : "="
            return """
                WITH u AS (SELECT * FROM unnest(\(parameters.joined(separator: ", "))) WITH ORDINALITY \
                AS u(\(names.joined(separator: ", ")), structpg_row)), \
                w AS (INSERT INTO \(schema.quotedTable) AS t (\(names.joined(separator: ", "))) \
                SELECT \(selected.joined(separator: ", ")) FROM u ORDER BY \(stored.joined(separator: ", ")), u.structpg_row \
                ON CONFLICT (\(quotedKeys)) \(conflict) \
                RETURNING t.ctid AS structpg_ctid, \(keys.map { "t.\(SQLIdentifier.quote($0))" }.joined(separator: ", ")), (t.xmax = 0) AS structpg_inserted) \
                SELECT DISTINCT ON (w.structpg_ctid) u.structpg_row, w.structpg_inserted \
                FROM u JOIN w ON (\(written.joined(separator: ", "))) \(equal) (\(stored.joined(separator: ", "))) \
                ORDER BY w.structpg_ctid, u.structpg_row
                """
        }
        return """
            WITH upserted AS (INSERT INTO \(schema.quotedTable) AS t (\(names.joined(separator: ", "))) \
            SELECT \(selected.joined(separator: ", ")) FROM unnest(\(parameters.joined(separator: ", "))) AS u(\(names.joined(separator: ", "))) \
            ORDER BY \(stored.joined(separator: ", ")) \
            ON CONFLICT (\(quotedKeys)) \(conflict) RETURNING (t.xmax = 0) AS inserted) \
            SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM upserted
            """
    }

    /// Refuses an entity whose unique key has no unique index behind it: `ON CONFLICT` needs one.
    static func requireUniqueIndex(_ description: EntityDescription) throws {
        let (schema, keys) = (description.schema, description.keyColumns)
        guard schema.hasUniqueIndex(on: keys) else {
            throw StructPostgresError(
                .invalidConfiguration,
                "\(description.entity).uniqueKey is (\(keys.joined(separator: ", "))), but table '\(schema.table)' has no unique index or primary key on exactly those columns",
                entity: description.entity, table: schema.table)
        }
    }

    /// The columns of the properties ``UpsertOptions/updating(_:)`` names, each of which the batch must encode.
    static func chosenColumns(_ chosen: [String], _ batch: BatchColumns, _ description: EntityDescription) throws -> [String] {
        guard !chosen.isEmpty else {
            throw StructPostgresError(
                .invalidConfiguration,
                "UpsertOptions.updating names no property to update; use .insertIfAbsent to leave existing rows as they are",
                entity: description.entity, table: description.schema.table)
        }
        let updated = try chosen.map { try description.column(for: $0) }
        for column in updated where !batch.columns.contains(where: { $0.name == column }) {
            throw StructPostgresError(
                .undefinedColumn, "column '\(column)' chosen for update is not encoded by \(description.entity)",
                entity: description.entity, table: description.schema.table, column: column)
        }
        return updated
    }

    /// True where a stored row differs from the written one in one of `columns`: a row that would not change is
    /// not rewritten (no new row version, no WAL), and RETURNING leaves it out. Types without `=` (json, xml,
    /// geometric ones) are compared as text.
    static func changedCondition(_ columns: [String], _ schema: TableSchema) -> String {
        func side(_ qualifier: String, _ column: String) -> String {
            let reference = "\(qualifier).\(SQLIdentifier.quote(column))"
            guard let info = schema.columns[column], !info.hasEquality else { return reference }
            return "\(reference)::text"
        }
        return "(" + columns.map { side("t", $0) }.joined(separator: ", ") + ") IS DISTINCT FROM ("
            + columns.map { side("EXCLUDED", $0) }.joined(separator: ", ") + ")"
    }

    /// A foreign-key violation of an upsert means a referenced row exists neither in the batch nor in the
    /// database: name the relationship (or column), the missing key, and that nothing was written.
    static func explainMissingReference<E: EntityProtocol>(
        _ error: StructPostgresError, _ type: E.Type, _ prepared: PreparedUpsert
    ) -> StructPostgresError {
        let description = prepared.description
        guard error.code == .foreignKeyViolation,
            let key = description.schema.foreignKeys.first(where: { $0.name == error.constraint }),
            key.columns.count == 1
        else { return error }
        var explained = error
        let column = key.columns[0]
        explained.column = column
        explained.property = prepared.columns.firstIndex(of: column).map { prepared.properties[$0] }
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
