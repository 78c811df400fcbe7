/// A batch of encoded entities of one table, column by column, checked against the table's schema.
///
/// Everything that can be known before sending is checked here, so a bad value fails the whole
/// batch before any statement runs: unknown columns, types that cannot go into a column, integers
/// out of the column's range, strings longer than `varchar(n)` and NUL bytes, which PostgreSQL refuses.
struct BatchColumns: Sendable {
    struct Column: Sendable {
        let name: String
        let property: String
        let info: TableSchema.Column
        /// The wire type of the column's values; `nil` when every value is null.
        let wire: WireType?
        let values: [ColumnValue]

        /// The parameter of `unnest`, e.g. `$3::int8[]`; a column of nulls travels as the column's own type.
        var arrayType: WireType { wire ?? info.naturalWire ?? .text }

        /// Whether the value needs an explicit cast to the column type (text and JSON into other types).
        var needsCast: Bool {
            switch arrayType {
            case .text: !info.isStringLike
            case .jsonb: info.baseName != "jsonb"
            default: false
            }
        }
    }

    let columns: [Column]
    let rowCount: Int
    let merged: Int

    init<E: EntityProtocol>(_ entities: [E], description: EntityDescription, keysOnly: Bool = false) throws {
        try self.init(entities[...], description: description, keysOnly: keysOnly)
    }

    /// A chunk of a larger batch; errors name an entity by its index in the whole batch. `keysOnly` keeps
    /// only the unique key's columns, duplicates included (what a delete needs).
    init<E: EntityProtocol>(_ entities: ArraySlice<E>, description: EntityDescription, keysOnly: Bool = false) throws {
        let entity = description.entity
        let table = description.schema.table
        let encoder = RowEncoder(naming: description.naming)
        var rows: [[ColumnValue]] = []
        rows.reserveCapacity(entities.count)
        var names: [String] = []
        var properties: [String] = []
        var shape = RowEncoder.learntShape(of: E.self)
        // A delete needs the key only: encoding stops after the last key column of the learnt shape.
        let prefix = keysOnly ? shape.flatMap { shape in
            description.keyColumns.map { shape.columns.firstIndex(of: $0) }.reduce(0 as Int?) { last, index in
                guard let last, let index else { return nil }
                return max(last, index + 1)
            }
        } : nil
        for index in entities.indices {
            let row: RowEncoder.Row
            do {
                row = try encoder.encode(entities[index], expecting: shape, prefix: prefix)
            } catch var error as StructPostgresError {
                error = error.with(entity: entity, table: table)
                error.message += " (entity at index \(index))"
                throw error
            }
            if index == entities.startIndex {
                names = row.columns
                properties = row.properties
                if shape == nil {
                    RowEncoder.learn(row, of: E.self)
                    shape = RowEncoder.learntShape(of: E.self)
                }
            } else if row.columns != names {
                throw StructPostgresError(
                    .unsupportedType, "entity at index \(index) encodes columns \(row.columns) but the first encodes \(names)",
                    entity: entity, table: table)
            }
            rows.append(row.values)
        }
        let keyIndexes = try description.keyColumns.map { key in
            guard let index = names.firstIndex(of: key) else {
                throw StructPostgresError(
                    .undefinedColumn, "unique key column '\(key)' is not among the encoded properties \(properties)",
                    entity: entity, table: table, column: key)
            }
            return index
        }
        let (unique, merged) = rows.count == 1 || keysOnly ? (rows, 0) : Self.mergeDuplicates(rows, keyIndexes: keyIndexes)
        self.merged = merged
        rows = unique
        let finalRows = rows
        self.rowCount = rows.count
        var columns: [Column] = []
        columns.reserveCapacity(names.count)
        let rowKey: (Int) -> String = { row in keyIndexes.map { "\(names[$0])=\(finalRows[row][$0].keyDescription)" }.joined(separator: ", ") }
        for (position, name) in names.enumerated() where !keysOnly || description.keyColumns.contains(name) {
            let property = properties[position]
            guard let info = description.schema.columns[name] else {
                throw StructPostgresError(
                    .undefinedColumn,
                    "property '\(property)' maps to column '\(name)', which table '\(table)' does not have (columns: \(description.schema.columnOrder.joined(separator: ", ")))",
                    sqlState: SQLState.undefinedColumn, entity: entity, table: table, column: name, property: property)
            }
            if columns.contains(where: { $0.name == name }) {
                throw StructPostgresError(
                    .undefinedColumn, "two properties map to column '\(name)'", entity: entity, table: table, column: name, property: property)
            }
            let values = rows.map { $0[position] }
            let checker = ValueChecker(entity: entity, table: table, column: info, property: property, rowKey: rowKey)
            let wire = try checker.check(values)
            columns.append(Column(name: name, property: property, info: info, wire: wire, values: values))
        }
        self.columns = columns
    }

    /// Keeps one row per unique key, the last one given, at the place of the first.
    private static func mergeDuplicates(_ rows: [[ColumnValue]], keyIndexes: [Int]) -> ([[ColumnValue]], Int) {
        var positions: [[ColumnValue]: Int] = [:]
        positions.reserveCapacity(rows.count)
        var result: [[ColumnValue]] = []
        result.reserveCapacity(rows.count)
        for row in rows {
            // Compare keys as PostgreSQL stores them: dates at microsecond precision.
            let key = keyIndexes.map { index -> ColumnValue in
                if case .timestamptz(let date) = row[index] { return .int8(TimestampCoding.microseconds(date)) }
                return row[index]
            }
            if key.contains(.null) {
                result.append(row)
            } else if let existing = positions[key] {
                result[existing] = row
            } else {
                positions[key] = result.count
                result.append(row)
            }
        }
        return (result, rows.count - result.count)
    }
}
