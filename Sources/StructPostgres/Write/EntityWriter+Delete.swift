import StructPostgresCore
import StructPostgresDriver

extension EntityWriter {
    /// Deletes the rows matching `filter` (every row without one) with one statement.
    func deleteAll<E: EntityProtocol>(_ type: E.Type, filter: Filter?) async throws -> Int {
        let description = try await session.describe(E.self)
        var statement = Statement(sql: "DELETE FROM \(description.schema.quotedTable)")
        try await session.appendWhere(filter, description, &statement)
        return try await session.tagged(description) { try await session.affectedRows(statement) }
    }

    /// Deletes the rows with the unique keys of `entities`, with one statement.
    func delete<E: EntityProtocol>(_ entities: [E]) async throws -> Int {
        guard !entities.isEmpty else { return 0 }
        let description = try await session.describe(E.self)
        let policy = options.mergePolicy ?? .error
        if description.versionColumn != nil, policy != .overwrite {
            let batch = try await BatchColumns(entities[...], description: description, keysOnly: true, withVersion: true, inParallel: true)
            let delete = try VersionedDelete(description: description, batch: batch, policy: policy)
            return try await session.tagged(description) { try delete.deleted(try await session.run(delete.statement())) }
        }
        let batch = try await BatchColumns(entities[...], description: description, keysOnly: true, inParallel: true)
        var statement = Statement(sql: "")
        var parameters: [String] = []
        for key in description.keyColumns {
            let column = batch.columns.first { $0.name == key }!
            let parameter = statement.bind(array: BinaryColumnArray(element: column.arrayType, values: column.values))
            parameters.append("\(parameter)::\(column.arrayType.sqlName)[]")
        }
        let table = description.schema.quotedTable
        let names = description.keyColumns.map(SQLIdentifier.quote).joined(separator: ", ")
        let casts = description.keyColumns.map { key in
            let column = batch.columns.first { $0.name == key }!
            return "k.\(SQLIdentifier.quote(key))" + (column.needsCast ? "::\(column.info.castName)" : "")
        }
        let keys = "unnest(\(parameters.joined(separator: ", "))) AS k(\(names))"
        let condition: String
        if batch.columns.contains(where: { $0.values.contains(where: \.isNull) }) {
            // Only reached for a NULLS NOT DISTINCT key (other nil keys are refused): nil matches NULL, which IN never does.
            let matches = zip(description.keyColumns, casts).map { "\(table).\(SQLIdentifier.quote($0)) IS NOT DISTINCT FROM \($1)" }
            condition = "EXISTS (SELECT 1 FROM \(keys) WHERE \(matches.joined(separator: " AND ")))"
        } else if description.keyColumns.count == 1 {
            let column = batch.columns.first { $0.name == description.keyColumns[0] }!
            let list = column.needsCast ? "\(parameters[0])::\(column.info.castName)[]" : parameters[0]
            condition = "\(names) = ANY(\(list))"
        } else {
            condition = "(\(names)) IN (SELECT \(casts.joined(separator: ", ")) FROM \(keys))"
        }
        statement.sql = "DELETE FROM \(table) WHERE \(condition)"
        return try await session.tagged(description) { try await session.affectedRows(statement) }
    }

    /// Deletes the rows with the unique keys of `entities` with one statement, and says for each entity whether its
    /// row went (1) or was not there (0). A key given twice goes to the first entity that gives it, as deleting them
    /// one after the other would.
    func deleteEach<E: EntityProtocol>(_ entities: [E]) async throws -> [Int] {
        guard !entities.isEmpty else { return [] }
        let description = try await session.describe(E.self)
        let batch = try await BatchColumns(entities[...], description: description, keysOnly: true, inParallel: false)
        let keyColumns = description.keyColumns.map { key in batch.columns.first { $0.name == key }! }
        // Each distinct key once, numbered; the first entity of each key is the one told its row went.
        var firstOfKey: [[ColumnValue]: Int] = [:]
        var distinct: [Int] = []
        for index in entities.indices {
            let key = keyColumns.map { $0.values[index] }
            if firstOfKey[key] == nil {
                firstOfKey[key] = distinct.count
                distinct.append(index)
            }
        }
        var statement = Statement(sql: "")
        var parameters: [String] = []
        for column in keyColumns {
            let parameter = statement.bind(array: BinaryColumnArray(element: column.arrayType, values: distinct.map { column.values[$0] }))
            parameters.append("\(parameter)::\(column.arrayType.sqlName)[]")
        }
        let table = description.schema.quotedTable
        let names = keyColumns.map { SQLIdentifier.quote($0.name) }
        // `=` finds rows through the key's index; a nil key (a NULLS NOT DISTINCT index) matches NULL only so.
        let nilKeys = keyColumns.contains { $0.values.contains(where: \.isNull) }
        let matches = zip(names, keyColumns).map { name, column in
            "\(table).\(name) \(nilKeys ? "IS NOT DISTINCT FROM" : "=") k.\(name)" + (column.needsCast ? "::\(column.info.castName)" : "")
        }
        statement.sql =
            "DELETE FROM \(table) USING unnest(\(parameters.joined(separator: ", "))) WITH ORDINALITY AS k(\(names.joined(separator: ", ")), structpg_place) WHERE \(matches.joined(separator: " AND ")) RETURNING k.structpg_place"
        var deleted = Array(repeating: 0, count: entities.count)
        for row in try await session.tagged(description, { try await session.run(statement) }) {
            let place = Int(try row.decode(Int64.self)) - 1
            deleted[distinct[place]] = 1
        }
        return deleted
    }
}
