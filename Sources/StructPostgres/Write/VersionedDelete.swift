import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// A delete of entities with a version (``EntityProtocol/versionKey``), in one statement: the stored rows of the
/// batch's keys are locked in key order (`FOR UPDATE`, the lock a delete takes anyway) and their current versions
/// read; a row stored at another version than the entity's is a conflict. Under ``MergePolicy/error`` one conflict
/// deletes nothing, under ``MergePolicy/rollback`` the conflicting rows stay and the others go. A key with no row is
/// no conflict: what the delete asks is done. (``MergePolicy/overwrite`` deletes as an entity without a version does.)
///
/// The statement answers a row with the count deleted (`NULL` place) and one row per conflict: its place in the batch
/// from 1 and the stored version.
struct VersionedDelete {
    let description: EntityDescription
    let batch: BatchColumns
    let policy: MergePolicy
    /// The version each entity was read at.
    private let versions: [Int]
    private let keys: [[ColumnValue]]

    /// The delete of `batch` (keys and versions); an entity whose version is not a whole number from 0 up is refused.
    init(description: EntityDescription, batch: BatchColumns, policy: MergePolicy) throws {
        guard let column = batch.columns.first(where: { $0.name == description.versionColumn }) else {
            throw VersionColumn.notEncoded(description, properties: batch.columns.map(\.property))
        }
        (self.description, self.batch, self.policy) = (description, batch, policy)
        let keys = description.keyColumns.compactMap { key in batch.columns.first { $0.name == key }?.values }
        self.keys = keys
        versions = try VersionColumn.versions(column.values, property: column.property, description: description) { row in
            zip(description.keyColumns, keys).map { "\($0)=\($1[row].keyDescription)" }.joined(separator: ", ")
        }
    }

    private func rowKey(_ row: Int) -> String {
        zip(description.keyColumns, keys).map { "\($0)=\($1[row].keyDescription)" }.joined(separator: ", ")
    }

    func statement() -> Statement {
        let schema = description.schema
        let keys = description.keyColumns
        let versionColumn = description.versionColumn ?? ""
        var statement = Statement(sql: "", parameters: batch.columns.count)
        var parameters: [String] = []
        for column in batch.columns {
            let parameter = statement.bind(array: BinaryColumnArray(element: column.arrayType, values: column.values))
            parameters.append("\(parameter)::\(column.arrayType.sqlName)[]")
        }
        let names = batch.columns.map { SQLIdentifier.quote($0.name) }
        let stored = keys.compactMap { key in
            batch.columns.first { $0.name == key }.map { "CAST(u.\(SQLIdentifier.quote(key)) AS \($0.info.castName))" }
        }
        let equal = schema.nullsMatch(in: keys) ? "IS NOT DISTINCT FROM" : "="
        let tKeys = keys.map { "t.\(SQLIdentifier.quote($0))" }.joined(separator: ", ")
        let lKeys = keys.map { "l.\(SQLIdentifier.quote($0))" }.joined(separator: ", ")
        let version = SQLIdentifier.quote(versionColumn)
        let keep =
            policy == .rollback
            ? "l.structpg_row NOT IN (SELECT structpg_row FROM structpg_conflicts)" : "NOT EXISTS (SELECT FROM structpg_conflicts)"
        statement.sql = """
            WITH u AS (SELECT * FROM unnest(\(parameters.joined(separator: ", "))) WITH ORDINALITY AS u(\(names.joined(separator: ", ")), structpg_row)), \
            structpg_locked AS (SELECT u.structpg_row, \(tKeys), t.\(version) AS structpg_stored FROM u JOIN \(schema.quotedTable) AS t \
            ON (\(tKeys)) \(equal) (\(stored.joined(separator: ", "))) ORDER BY \(tKeys) FOR UPDATE OF t), \
            structpg_conflicts AS (SELECT l.structpg_row, l.structpg_stored FROM structpg_locked AS l JOIN u USING (structpg_row) \
            WHERE l.structpg_stored <> u.\(version)), \
            d AS (DELETE FROM \(schema.quotedTable) AS t USING structpg_locked AS l WHERE (\(tKeys)) \(equal) (\(lKeys)) AND \(keep) RETURNING 1) \
            SELECT NULL::int8, count(*)::int8 FROM d \
            UNION ALL SELECT c.structpg_row, c.structpg_stored::int8 FROM structpg_conflicts AS c
            """
        return statement
    }

    /// How many rows went, from the statement's answer; the conflicts throw under ``MergePolicy/error`` (nothing
    /// went) and are left out of the count under ``MergePolicy/rollback``.
    func deleted(_ rows: [PostgresRow]) throws -> Int {
        var count = 0
        var conflicts: [VersionConflict] = []
        for row in rows {
            let (place, number) = try row.decode((Int64?, Int64).self)
            guard let place else {
                count = Int(number)
                continue
            }
            let index = Int(place) - 1
            conflicts.append(
                VersionConflict(
                    entity: description.entity, table: description.schema.table, rowKey: rowKey(index), version: versions[index],
                    storedVersion: Int(number)))
        }
        if policy == .error, !conflicts.isEmpty { throw StructPostgresError.versionConflict(conflicts, verb: "deleted") }
        return count
    }
}
