import StructPostgresCore
import StructPostgresDriver

/// The SQL of upserts of an entity with a version (``EntityProtocol/versionKey``): one statement per table, as every
/// upsert, that writes only at the versions the rows were read at and reports each row.
///
/// Under ``MergePolicy/error`` and ``MergePolicy/rollback`` the statement first locks the batch's stored rows in key
/// order (`FOR NO KEY UPDATE`, the lock its update takes anyway) and reads their versions, current and held until the
/// call ends; the rows whose stored version is not the row's (`0`: no row stored) are the conflicts. Under `error` a
/// single conflict leaves the insert without rows, so nothing is written; under `rollback` only the conflicting rows
/// are left out. An insert stores 1; an update stores the version plus one, and a row whose values would not change
/// is left as it is. A row inserted by another transaction after the lock was taken (a model at version 0 racing
/// another insert) meets the `DO UPDATE`, whose version expression yields NULL there: the version column refuses it,
/// so the statement fails and nothing is written (``EntityWriter`` turns that into a retryable error).
///
/// Under ``MergePolicy/overwrite`` every row is written: an insert stores 1, an update the stored version plus one.
/// With ``UpsertOptions/insertIfAbsent`` new rows store 1 and existing ones are left as they are.
///
/// Each statement answers one row per row written (`structpg_row`, its place in the batch from 1, `inserted`, the
/// version stored) and one per conflict (`structpg_row`, NULL, NULL, the stored version or NULL for no row).
enum VersionedUpsertSQL {
    static func text(_ batch: BatchColumns, description: EntityDescription, options: UpsertOptions) throws -> String {
        let schema = description.schema
        let keys = description.keyColumns
        try UpsertSQL.requireUniqueIndex(description)
        guard let versionColumn = description.versionColumn,
            let versionIndex = batch.columns.firstIndex(where: { $0.name == versionColumn })
        else {
            throw VersionColumn.notEncoded(description, properties: batch.columns.map(\.property))
        }
        try VersionColumn.check(description)
        let names = batch.columns.map { SQLIdentifier.quote($0.name) }
        let source: String
        if batch.rowCount == 1 {
            let values = names.indices.map { "$\($0 + 1) AS \(names[$0])" }
            source = "u AS (SELECT \(values.joined(separator: ", ")), 1::int8 AS structpg_row)"
        } else {
            let parameters = batch.columns.indices.map { "$\($0 + 1)::\(batch.columns[$0].arrayType.sqlName)[]" }
            source =
                "u AS (SELECT * FROM unnest(\(parameters.joined(separator: ", "))) WITH ORDINALITY AS u(\(names.joined(separator: ", ")), structpg_row))"
        }
        let selected = batch.columns.map { column in
            "u.\(SQLIdentifier.quote(column.name))" + (column.needsCast ? "::\(column.info.castName)" : "")
        }
        let version = SQLIdentifier.quote(versionColumn)
        let modelVersion = "u.\(version)"
        let stored = keys.compactMap { key in
            batch.columns.firstIndex { $0.name == key }.map { "CAST(\(selected[$0]) AS \(batch.columns[$0].info.castName))" }
        }
        let equal = schema.nullsMatch(in: keys) ? "IS NOT DISTINCT FROM" : "="
        let table = "\(schema.quotedTable) AS t"
        let keyList = keys.map(SQLIdentifier.quote).joined(separator: ", ")
        let returning = "RETURNING \(keys.map { "t.\(SQLIdentifier.quote($0))" }.joined(separator: ", ")), "
        let written =
            "SELECT u.structpg_row, w.structpg_inserted, w.structpg_version::int8, NULL::int8 FROM u JOIN w ON "
            + "(\(keys.map { "w.\(SQLIdentifier.quote($0))" }.joined(separator: ", "))) \(equal) (\(stored.joined(separator: ", ")))"
        var inserted = selected
        let policy = options.mergePolicy ?? .error

        if options.conflict == .ignore || policy == .overwrite {
            inserted[versionIndex] = "1"
            let conflict: String
            if options.conflict == .ignore {
                conflict = "DO NOTHING"
            } else {
                let assignments = try updatedColumns(batch, description, options).map {
                    "\(SQLIdentifier.quote($0)) = EXCLUDED.\(SQLIdentifier.quote($0))"
                }
                conflict = "DO UPDATE SET " + (assignments + ["\(version) = t.\(version) + 1"]).joined(separator: ", ")
            }
            return """
                WITH \(source), \
                w AS (INSERT INTO \(table) (\(names.joined(separator: ", "))) \
                SELECT \(inserted.joined(separator: ", ")) FROM u ORDER BY \(stored.joined(separator: ", ")), u.structpg_row \
                ON CONFLICT (\(keyList)) \(conflict) \
                \(returning)(t.xmax = 0) AS structpg_inserted, t.\(version) AS structpg_version) \
                \(written)
                """
        }

        inserted[versionIndex] = "\(modelVersion) + 1"
        let updated = try updatedColumns(batch, description, options)
        let assignments =
            updated.map { "\(SQLIdentifier.quote($0)) = EXCLUDED.\(SQLIdentifier.quote($0))" }
            + ["\(version) = CASE WHEN t.\(version) = EXCLUDED.\(version) - 1 THEN EXCLUDED.\(version) END"]
        let stale = "t.\(version) IS DISTINCT FROM EXCLUDED.\(version) - 1"
        let condition = updated.isEmpty ? stale : "\(stale) OR \(UpsertSQL.changedCondition(updated, schema))"
        let keep =
            policy == .rollback
            ? "u.structpg_row NOT IN (SELECT structpg_row FROM structpg_conflicts)" : "NOT EXISTS (SELECT FROM structpg_conflicts)"
        return """
            WITH \(source), \
            structpg_locked AS (SELECT u.structpg_row, t.\(version) AS structpg_stored FROM u JOIN \(table) \
            ON (\(keys.map { "t.\(SQLIdentifier.quote($0))" }.joined(separator: ", "))) \(equal) (\(stored.joined(separator: ", "))) \
            ORDER BY \(keys.map { "t.\(SQLIdentifier.quote($0))" }.joined(separator: ", ")) FOR NO KEY UPDATE OF t), \
            structpg_conflicts AS (SELECT u.structpg_row, l.structpg_stored FROM u LEFT JOIN structpg_locked AS l USING (structpg_row) \
            WHERE l.structpg_stored IS DISTINCT FROM nullif(\(modelVersion), 0)), \
            w AS (INSERT INTO \(table) (\(names.joined(separator: ", "))) \
            SELECT \(inserted.joined(separator: ", ")) FROM u WHERE \(keep) ORDER BY \(stored.joined(separator: ", ")), u.structpg_row \
            ON CONFLICT (\(keyList)) DO UPDATE SET \(assignments.joined(separator: ", ")) WHERE \(condition) \
            \(returning)(t.xmax = 0) AS structpg_inserted, t.\(version) AS structpg_version) \
            \(written) \
            UNION ALL SELECT c.structpg_row, NULL, NULL, c.structpg_stored::int8 FROM structpg_conflicts AS c
            """
    }

    /// The columns an update assigns (the version aside, which the statement sets): every encoded column but the
    /// key's, or the ones ``UpsertOptions/updating(_:)`` names, which may not name the version.
    private static func updatedColumns(_ batch: BatchColumns, _ description: EntityDescription, _ options: UpsertOptions) throws -> [String]
    {
        let keys = description.keyColumns
        let versionColumn = description.versionColumn
        guard case .update(let chosen) = options.conflict else {
            return batch.columns.map(\.name).filter { !keys.contains($0) && $0 != versionColumn }
        }
        let updated = try UpsertSQL.chosenColumns(chosen, batch, description)
        if let versionColumn, updated.contains(versionColumn) {
            throw StructPostgresError(
                .invalidConfiguration,
                "UpsertOptions.updating names '\(versionColumn)', the version of \(description.entity), which every write sets itself; leave it out",
                entity: description.entity, table: description.schema.table, column: versionColumn)
        }
        return updated
    }
}
