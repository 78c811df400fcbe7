import PostgresNIO

extension DatabaseSession {
    /// Writes a batch of one table with one statement:
    /// `INSERT ... SELECT ... FROM unnest($1::uuid[], ...) ON CONFLICT (key) DO UPDATE ...`, or for a single
    /// row `INSERT ... VALUES ($1, ...) ON CONFLICT ...`; both are prepared once per connection (the server
    /// switches to one generic plan after five executions).
    ///
    /// A batch of more than ``rowsPerStatement`` rows is sent in chunks of that many rows, so that memory stays
    /// flat however large the batch (callers run them in one transaction). A key repeated in two chunks is
    /// written twice, the last one winning, and counted as updated rather than merged.
    /// A table with a foreign key to itself is always written with one statement: a row may reference a later one.
    /// `inParallel`: nothing else is encoded meanwhile, so a chunk of ``ParallelRows/minimum`` rows or more is
    /// encoded on more than one thread.
    func upsert<E: EntityProtocol>(_ entities: [E], options: UpsertOptions, inParallel: Bool) async throws -> UpsertResult {
        guard entities.count > Self.rowsPerStatement, try await !describe(E.self).schema.referencesItself else {
            return try await upsertChunk(entities[...], options: options, inParallel: inParallel)
        }
        var total = UpsertResult()
        for start in stride(from: 0, to: entities.count, by: Self.rowsPerStatement) {
            let chunk = entities[start..<min(entities.count, start + Self.rowsPerStatement)]
            total = total + (try await upsertChunk(chunk, options: options, inParallel: inParallel))
        }
        return total
    }

    /// Rows per upsert statement: larger batches are split.
    static let rowsPerStatement = 10_000

    private func upsertChunk<E: EntityProtocol>(_ entities: ArraySlice<E>, options: UpsertOptions, inParallel: Bool) async throws -> UpsertResult {
        guard !entities.isEmpty else { return UpsertResult() }
        if entities.count == 1,
           let prepared = runtime.singleRowPlan(.init(entity: ObjectIdentifier(E.self), conflict: options.conflict))?
               .prepare(entities[entities.startIndex], options: options) {
            return try await sendUpsert(prepared, E.self)
        }
        let description = try await describe(E.self)
        let prepared = try Self.prepareUpsert(entities, description: description, options: options, runtime: runtime, inParallel: inParallel)
        return try await sendUpsert(prepared, E.self)
    }

    /// An upsert encoded and checked, ready to send: what can be done before waiting for the server.
    struct PreparedUpsert: Sendable {
        let statement: Statement
        let rowCount: Int
        let merged: Int
        /// The encoded columns, in order, and the properties they come from.
        let columns: [String]
        let properties: [String]
        let description: EntityDescription
        let options: UpsertOptions
    }

    /// Encodes and checks an upsert; a single row's makes the plan later single rows of `E` take. `inParallel`:
    /// a large batch is encoded on more than one thread (see ``BatchColumns``).
    static func prepareUpsert<E: EntityProtocol>(
        _ entities: ArraySlice<E>, description: EntityDescription, options: UpsertOptions, runtime: ServiceRuntime,
        inParallel: Bool
    ) throws -> PreparedUpsert {
        let batch = try BatchColumns(entities, description: description, inParallel: inParallel)
        let shape = UpsertShape(
            entity: ObjectIdentifier(E.self),
            columns: batch.columns.map { .init(name: $0.name, wire: $0.arrayType, needsCast: $0.needsCast) },
            conflict: options.conflict, singleRow: batch.rowCount == 1)
        let statement = try bindColumns(batch, sql: try runtime.upsertText(shape) {
            try upsertSQL(batch, description: description, options: options)
        }, inParallel: inParallel)
        let prepared = PreparedUpsert(
            statement: statement, rowCount: batch.rowCount, merged: batch.merged, columns: batch.columns.map(\.name),
            properties: batch.columns.map(\.property), description: description, options: options)
        if entities.count == 1 {
            runtime.store(SingleRowUpsertPlan(prepared, batch: batch), for: .init(entity: ObjectIdentifier(E.self), conflict: options.conflict))
        }
        return prepared
    }

    /// Sends a prepared upsert; counts what it did.
    func sendUpsert<E: EntityProtocol>(_ prepared: PreparedUpsert, _ type: E.Type) async throws -> UpsertResult {
        let description = prepared.description
        let rows: [PostgresRow]
        do {
            rows = try await run(prepared.statement)
        } catch let error as StructPostgresError {
            throw Self.explainMissingReference(error.with(entity: description.entity, table: description.schema.table), E.self, prepared)
        }
        let inserted: Int64
        let changed: Int64
        if prepared.rowCount == 1 {
            inserted = try rows.first?.first?.decode(Bool.self) == true ? 1 : 0
            changed = Int64(rows.count) - inserted
        } else {
            (inserted, changed) = try rows[0].decode((Int64, Int64).self)
        }
        var result = UpsertResult(inserted: Int(inserted), merged: prepared.merged)
        if prepared.options.conflict == .ignore {
            result.skipped = prepared.rowCount - Int(inserted)
        } else {
            result.updated = Int(changed)
            result.unchanged = prepared.rowCount - Int(inserted) - Int(changed)
        }
        return result
    }

    static func upsertStatement(
        _ batch: BatchColumns, description: EntityDescription, options: UpsertOptions
    ) throws -> Statement {
        try bindColumns(batch, sql: try upsertSQL(batch, description: description, options: options), inParallel: false)
    }

    /// The statement `sql` with one parameter per column of `batch`, in order: an array, or for a single row its
    /// value. `inParallel`: the arrays of a large batch are encoded at once, one column per thread.
    static func bindColumns(_ batch: BatchColumns, sql: String, inParallel: Bool) throws -> Statement {
        var statement = Statement(sql: sql, parameters: batch.columns.count)
        if batch.rowCount == 1 {
            for column in batch.columns { _ = statement.bind(column.values[0], declaredAs: column.arrayType) }
            return statement
        }
        let arrays = batch.columns.map { BinaryColumnArray(element: $0.arrayType, values: $0.values) }
        if inParallel, batch.rowCount >= ParallelRows.minimum {
            for encoded in try ParallelRows.map(arrays.count, { try arrays[$0].encoded() }) { _ = statement.bind(array: encoded) }
        } else {
            for array in arrays { _ = statement.bind(array: array) }
        }
        return statement
    }

    private static func upsertSQL(_ batch: BatchColumns, description: EntityDescription, options: UpsertOptions) throws -> String {
        let schema = description.schema
        let keys = description.keyColumns
        guard schema.hasUniqueIndex(on: keys) else {
            throw StructPostgresError(
                .invalidConfiguration,
                "\(description.entity).uniqueKey is (\(keys.joined(separator: ", "))), but table '\(schema.table)' has no unique index or primary key on exactly those columns",
                entity: description.entity, table: schema.table)
        }
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
                updated = try chosen.map { try description.column(for: $0) }
                for column in updated where !batch.columns.contains(where: { $0.name == column }) {
                    throw StructPostgresError(
                        .undefinedColumn, "column '\(column)' chosen for update is not encoded by \(description.entity)",
                        entity: description.entity, table: schema.table, column: column)
                }
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
        return """
            WITH upserted AS (INSERT INTO \(schema.quotedTable) AS t (\(names.joined(separator: ", "))) \
            SELECT \(selected.joined(separator: ", ")) FROM unnest(\(parameters.joined(separator: ", "))) AS u(\(names.joined(separator: ", "))) \
            ON CONFLICT (\(quotedKeys)) \(conflict) RETURNING (t.xmax = 0) AS inserted) \
            SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM upserted
            """
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
