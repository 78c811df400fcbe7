import StructPostgresCore
import StructPostgresDriver

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
    ///
    /// Three stages: encoding (``BatchEncoder``), the unique key (nil parts refused, duplicates merged), and the
    /// checks of each column against the table.
    init<E: EntityProtocol>(_ entities: ArraySlice<E>, description: EntityDescription, keysOnly: Bool = false, withVersion: Bool = false)
        throws
    {
        let only = Self.onlyColumns(description, keysOnly: keysOnly, withVersion: withVersion)
        var encoded = try BatchEncoder(description: description, only: only).encode(entities)
        let (keyIndexes, merged) = try Self.keyed(&encoded, rowCount: entities.count, description: description, keysOnly: keysOnly)
        let checks = try Self.columnChecks(encoded, keyIndexes: keyIndexes, description: description, only: only)
        try self.init(rowCount: entities.count - merged, merged: merged, columns: (0..<checks.count).map(checks.check))
    }

    /// The batch the synchronous initializer makes. `inParallel`: a batch of ``ParallelRows/minimum``
    /// rows or more is encoded in two halves at once and its columns checked at once (for a batch nothing else
    /// waits on: one the server is writing meanwhile would only take its core).
    init<E: EntityProtocol>(
        _ entities: ArraySlice<E>, description: EntityDescription, keysOnly: Bool = false, withVersion: Bool = false, inParallel: Bool
    ) async throws {
        guard inParallel, entities.count >= ParallelRows.minimum else {
            try self.init(entities, description: description, keysOnly: keysOnly, withVersion: withVersion)
            return
        }
        let only = Self.onlyColumns(description, keysOnly: keysOnly, withVersion: withVersion)
        var encoded = try await BatchEncoder(description: description, only: only).encode(entities, inParallel: true)
        let (keyIndexes, merged) = try Self.keyed(&encoded, rowCount: entities.count, description: description, keysOnly: keysOnly)
        let checks = try Self.columnChecks(encoded, keyIndexes: keyIndexes, description: description, only: only)
        let rowCount = entities.count - merged
        let columns =
            rowCount >= ParallelRows.minimum
            ? try await ParallelRows.map(checks.count, checks.check) : try (0..<checks.count).map(checks.check)
        self.init(rowCount: rowCount, merged: merged, columns: columns)
    }

    /// The columns a batch of keys keeps: the unique key's, and `withVersion` the version's; `nil`: every column.
    private static func onlyColumns(_ description: EntityDescription, keysOnly: Bool, withVersion: Bool) -> [String]? {
        guard keysOnly else { return nil }
        guard withVersion, let version = description.versionColumn else { return description.keyColumns }
        return description.keyColumns + [version]
    }

    private init(rowCount: Int, merged: Int, columns: [Column]) {
        self.rowCount = rowCount
        self.merged = merged
        self.columns = columns
    }

    /// The unique key's stage: the key's columns among the encoded ones, nil parts refused unless the index matches
    /// nulls, and duplicates merged (the last of each key, at the place of the first; not for `keysOnly`).
    private static func keyed(
        _ encoded: inout BatchEncoder.Encoded, rowCount: Int, description: EntityDescription, keysOnly: Bool
    ) throws -> (keyIndexes: [Int], merged: Int) {
        let keyIndexes = try Self.keyIndexes(encoded, description)
        let nullsMatch = description.schema.nullsMatch(in: description.keyColumns)
        if !nullsMatch { try Self.refuseNilKeys(encoded, keyIndexes: keyIndexes, description: description) }
        let merged =
            rowCount == 1 || keysOnly
            ? 0 : Self.mergeDuplicates(&encoded.columns, rowCount: rowCount, keyIndexes: keyIndexes, nullsMatch: nullsMatch)
        return (keyIndexes, merged)
    }

    /// What the table says of each encoded column first (unknown columns, two properties on one, thrown here), then
    /// the check of every value of column `index` (`check`), for the caller to run in order or at once.
    private static func columnChecks(
        _ encoded: BatchEncoder.Encoded, keyIndexes: [Int], description: EntityDescription, only: [String]?
    ) throws -> (count: Int, check: (Int) throws -> Column) {
        let keysOnly = only != nil
        let (entity, table) = (description.entity, description.schema.table)
        var kept: [(name: String, property: String, info: TableSchema.Column, values: [ColumnValue])] = []
        kept.reserveCapacity(encoded.names.count)
        for (position, name) in encoded.names.enumerated() where only?.contains(name) ?? true {
            let property = encoded.properties[position]
            guard let info = description.schema.columns[name] else {
                throw StructPostgresError(
                    .undefinedColumn,
                    "property '\(property)' maps to column '\(name)', which table '\(table)' does not have (columns: \(description.schema.columnOrder.joined(separator: ", ")))",
                    sqlState: SQLState.undefinedColumn, entity: entity, table: table, column: name, property: property)
            }
            if kept.contains(where: { $0.name == name }) {
                throw StructPostgresError(
                    .undefinedColumn, "two properties map to column '\(name)'", entity: entity, table: table, column: name,
                    property: property)
            }
            if !keysOnly {
                try ValueChecker(entity: entity, table: table, column: info, property: property, rowKey: { _ in "" }).checkWritable()
            }
            kept.append((name, property, info, encoded.columns[position]))
        }
        let (names, values) = (encoded.names, encoded.columns)
        let rowKey: @Sendable (Int) -> String = { row in
            keyIndexes.map { "\(names[$0])=\(values[$0][row].keyDescription)" }.joined(separator: ", ")
        }
        let columns = kept
        return (
            columns.count,
            { index in
                let (name, property, info, values) = columns[index]
                let wire = try ValueChecker(entity: entity, table: table, column: info, property: property, rowKey: rowKey).check(values)
                return Column(name: name, property: property, info: info, wire: wire, values: values)
            }
        )
    }

    /// The positions of the unique key's columns among the encoded ones.
    private static func keyIndexes(_ encoded: BatchEncoder.Encoded, _ description: EntityDescription) throws -> [Int] {
        try description.keyColumns.map { key in
            guard let index = encoded.names.firstIndex(of: key) else {
                throw StructPostgresError(
                    .undefinedColumn, "unique key column '\(key)' is not among the encoded properties \(encoded.properties)",
                    entity: description.entity, table: description.schema.table, column: key)
            }
            return index
        }
    }

    /// A key with a NULL never matches a stored row (unless its index is `NULLS NOT DISTINCT`): writing the same
    /// record twice would insert it twice, so such a row is refused by name before anything is sent.
    private static func refuseNilKeys(_ encoded: BatchEncoder.Encoded, keyIndexes: [Int], description: EntityDescription) throws {
        let (columns, names, properties) = (encoded.columns, encoded.names, encoded.properties)
        for index in keyIndexes {
            guard let row = columns[index].firstIndex(where: \.isNull) else { continue }
            let key = keyIndexes.map { "\(names[$0])=\(columns[$0][row].keyDescription)" }.joined(separator: ", ")
            let whole =
                keyIndexes.count == 1
                ? "the unique key" : "part of the unique key (\(keyIndexes.map { names[$0] }.joined(separator: ", ")))"
            throw StructPostgresError(
                .invalidValue,
                "\(description.entity).\(properties[index]) is nil, and it is \(whole): PostgreSQL never matches NULL in ON CONFLICT, so every write would insert the record again. Give it a value, or declare the unique index NULLS NOT DISTINCT (PostgreSQL 15 and later) to make nil match nil",
                sqlState: SQLState.notNullViolation, entity: description.entity, table: description.schema.table,
                column: names[index], property: properties[index], rowKey: key)
        }
    }

    /// Keeps one row per unique key, the last one given, at the place of the first; returns how many were dropped.
    private static func mergeDuplicates(_ columns: inout [[ColumnValue]], rowCount: Int, keyIndexes: [Int], nullsMatch: Bool) -> Int {
        let kept: [Int]
        if keyIndexes.count == 1 {
            let keys = columns[keyIndexes[0]]
            if let uuids = UUIDKey.all(keys) {
                kept = keptRows(rowCount, isNull: { _ in false }) { uuids[$0] }
            } else {
                kept = keptRows(rowCount, isNull: { !nullsMatch && $0.isNull }) { storedKey(keys[$0]) }
            }
        } else {
            let snapshot = columns
            kept = keptRows(rowCount, isNull: { !nullsMatch && $0.contains(where: \.isNull) }) { row in
                keyIndexes.map { storedKey(snapshot[$0][row]) }
            }
        }
        guard kept.count < rowCount else { return 0 }
        columns = columns.map { values in kept.map { values[$0] } }
        return rowCount - kept.count
    }

    /// The positions of `entities` in rounds without a repeated unique key: the first of each key in the first
    /// round, the second in the second, and so on, each round in the order given.
    static func rounds<E: EntityProtocol>(_ entities: [E], description: EntityDescription) throws -> [[Int]] {
        let keys = try BatchColumns(entities, description: description, keysOnly: true).columns
        var seen: [[ColumnValue]: Int] = [:]
        var rounds: [[Int]] = []
        for row in entities.indices {
            let key = keys.map { storedKey($0.values[row]) }
            let round = seen[key, default: 0]
            seen[key] = round + 1
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(row)
        }
        return rounds
    }

    /// The positions of `entities` to write, merged as one batch merges them (the last of each unique key, at the
    /// place of the first): for a table written in several chunks, so that a key repeated across chunks is written once.
    static func lastOfEachKey<E: EntityProtocol>(_ entities: [E], description: EntityDescription) throws -> [Int] {
        let keys = try BatchColumns(entities, description: description, keysOnly: true).columns
        let nullsMatch = description.schema.nullsMatch(in: description.keyColumns)
        return keptRows(entities.count, isNull: { !nullsMatch && $0.contains(where: \.isNull) }) { row in
            keys.map { storedKey($0.values[row]) }
        }
    }

    /// A key as PostgreSQL compares it: dates at microsecond precision.
    private static func storedKey(_ value: ColumnValue) -> ColumnValue {
        if case .timestamptz(let date) = value { return .int8(TimestampCoding.microseconds(date)) }
        return value
    }

    /// The rows to keep, in order: for each key the place of its first row holds its last one; rows with a null key all stay.
    private static func keptRows<Key: Hashable>(_ rowCount: Int, isNull: (Key) -> Bool, key: (Int) -> Key) -> [Int] {
        var positions: [Key: Int] = [:]
        positions.reserveCapacity(rowCount)
        var kept: [Int] = []
        kept.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            let key = key(row)
            if isNull(key) {
                kept.append(row)
            } else if let existing = positions[key] {
                kept[existing] = row
            } else {
                positions[key] = kept.count
                kept.append(row)
            }
        }
        return kept
    }
}

/// A uuid key, hashed as two words: far cheaper than hashing a ``ColumnValue``.
private struct UUIDKey: Hashable {
    let high: UInt64
    let low: UInt64

    /// The keys of a column holding only uuids; `nil` when one is null or of another type.
    static func all(_ values: [ColumnValue]) -> [UUIDKey]? {
        var keys: [UUIDKey] = []
        keys.reserveCapacity(values.count)
        for value in values {
            guard case .uuid(let uuid) = value else { return nil }
            let (high, low) = withUnsafeBytes(of: uuid.uuid) {
                ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            keys.append(UUIDKey(high: high, low: low))
        }
        return keys
    }
}
