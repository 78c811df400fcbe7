import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// What an upsert of an entity with a version knows of its rows besides the statement: each row's key and the version
/// it was read at, to tell from the statement's answer what became of each (see ``VersionedUpsertSQL``).
struct VersionedRows: Sendable {
    let description: EntityDescription
    let entity: ObjectIdentifier
    let options: UpsertOptions
    /// The unique key's values, column by column.
    let keys: [[ColumnValue]]
    /// The version each row was read at.
    let versions: [Int]

    /// The rows of `batch`; a row whose version is not a whole number from 0 up is refused.
    init<E: EntityProtocol>(_ type: E.Type, batch: BatchColumns, description: EntityDescription, options: UpsertOptions) throws {
        let keys = description.keyColumns.compactMap { key in batch.columns.first { $0.name == key }?.values }
        guard let column = batch.columns.first(where: { $0.name == description.versionColumn }) else {
            throw VersionColumn.notEncoded(description, properties: batch.columns.map(\.property))
        }
        let versions = try VersionColumn.versions(column.values, property: column.property, description: description) { row in
            zip(description.keyColumns, keys).map { "\($0)=\($1[row].keyDescription)" }.joined(separator: ", ")
        }
        self.init(E.self, description: description, options: options, keys: keys, versions: versions)
    }

    init<E: EntityProtocol>(_ type: E.Type, description: EntityDescription, options: UpsertOptions, keys: [[ColumnValue]], versions: [Int])
    {
        self.description = description
        entity = ObjectIdentifier(E.self)
        self.options = options
        self.keys = keys
        self.versions = versions
    }

    var count: Int { versions.count }

    /// A row inserted by another transaction after this statement locked the rows it found (see
    /// ``VersionedUpsertSQL``): its version column refused the statement, which wrote nothing. Sent again, the
    /// statement finds the row; so the error is a serialization failure, which writes and transactions run again.
    func racedInsert(_ error: StructPostgresError) -> StructPostgresError? {
        guard error.sqlState == SQLState.notNullViolation, error.column == description.versionColumn else { return nil }
        var raced = StructPostgresError(
            .serializationFailure,
            "a row of \(description.entity) was inserted by another transaction while this write ran; nothing was written, and running it again reads that row",
            sqlState: SQLState.serializationFailure, entity: description.entity, table: description.schema.table,
            column: description.versionColumn, sql: error.sql, underlying: error)
        raced.rowKey = error.rowKey
        return raced
    }

    func rowKey(_ row: Int) -> String {
        zip(description.keyColumns, keys).map { "\($0)=\($1[row].keyDescription)" }.joined(separator: ", ")
    }

    /// What became of each row, from the statement's answer: a row it names was written (or, with a NULL
    /// `inserted`, conflicts); one it does not name was left as it was, already holding its values.
    func outcomes(_ rows: [PostgresRow]) throws -> [VersionedRow] {
        let untouched: VersionedRow = options.conflict == .ignore ? .skipped : .unchanged
        var outcomes = Array(repeating: untouched, count: count)
        for row in rows {
            let (place, inserted, version, stored) = try row.decode((Int64, Bool?, Int64?, Int64?).self)
            let index = Int(place) - 1
            if let inserted, let version {
                outcomes[index] = inserted ? .inserted(Int(version)) : .updated(Int(version))
            } else {
                outcomes[index] = .conflict(
                    VersionConflict(
                        entity: description.entity, table: description.schema.table, rowKey: rowKey(index), version: versions[index],
                        storedVersion: stored.map(Int.init)))
            }
        }
        return outcomes
    }

    /// The result of `rows` (all of the statement's, or one row's) from their outcomes: counts, conflicts, and the
    /// version each row holds now.
    func result(_ outcomes: [VersionedRow], rows: some Collection<Int>, merged: Int = 0) -> UpsertResult {
        var result = UpsertResult(merged: merged)
        var kept: [WrittenVersions.Outcome] = []
        kept.reserveCapacity(rows.count)
        for row in rows {
            switch outcomes[row] {
            case .inserted(let version):
                result.inserted += 1
                kept.append(.version(version))
            case .updated(let version):
                result.updated += 1
                kept.append(.version(version))
            case .unchanged:
                result.unchanged += 1
                kept.append(.version(versions[row]))
            case .skipped:
                result.skipped += 1
                kept.append(.unknown)
            case .conflict(let conflict):
                result.conflicts.append(conflict)
                kept.append(.conflict(conflict))
            }
        }
        let keyValues = rows.count == count ? keys : keys.map { column in rows.map { column[$0] } }
        result.versions = WrittenVersions([.init(entity: entity, keyColumns: description.keyColumns, keys: keyValues, outcomes: kept)])
        return result
    }
}

/// What a versioned upsert did to one row.
enum VersionedRow: Sendable {
    case inserted(Int)
    case updated(Int)
    /// Its values were the stored ones: left as it was, at the version it was read at.
    case unchanged
    /// Left as it was by ``UpsertOptions/insertIfAbsent``.
    case skipped
    case conflict(VersionConflict)

    var conflict: VersionConflict? {
        if case .conflict(let conflict) = self { return conflict }
        return nil
    }
}
