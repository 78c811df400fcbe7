import StructPostgresCore
import StructPostgresDriver

/// Decodes one row of a grouped query into a `Decodable` of the caller's, its properties matched by name with the
/// grouping keys' property names and the figures' names (``Aggregate/named(_:)``).
struct GroupRowDecoder: Decoder {
    let rows: AggregateRows
    let row: Int
    let indexes: [String: Int]
    /// The type decoded, for messages.
    let model: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Every row of `rows` as a `T`.
    static func decodeAll<T: Decodable>(_ type: T.Type, _ rows: AggregateRows) throws -> [T] {
        var indexes: [String: Int] = [:]
        for (index, name) in rows.cells.names.enumerated() where indexes[name] == nil { indexes[name] = index }
        return try (0..<rows.count).map { try T(from: GroupRowDecoder(rows: rows, row: $0, indexes: indexes, model: "\(T.self)")) }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Container(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw notKeyed() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw notKeyed() }

    private func notKeyed() -> StructPostgresError {
        StructPostgresError(
            .unsupportedType, "\(model) must decode from a keyed container (a struct) to take a grouped query's rows",
            entity: rows.entity, table: rows.table)
    }

    /// The column of `key`; a property without one fails by name, also an optional one (a misspelt name would
    /// otherwise decode as nil).
    fileprivate func index(_ key: some CodingKey) throws -> Int {
        guard let index = indexes[key.stringValue] else {
            throw StructPostgresError(
                .undefinedColumn,
                "property '\(key.stringValue)' of \(model) has no column in the grouped result (its columns: \(rows.cells.names.joined(separator: ", "))); name a figure so with .named(\"\(key.stringValue)\")",
                entity: rows.entity, table: rows.table, property: key.stringValue)
        }
        return index
    }

    private struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: GroupRowDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { decoder.indexes.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { true }

        func decodeNil(forKey key: Key) throws -> Bool {
            decoder.rows.cells.bytes(row: decoder.row, column: try decoder.index(key)) == nil
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder.rows.value(T.self, row: decoder.row, column: try decoder.index(key))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<
            NestedKey
        > {
            throw nested(key)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw nested(key) }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder }

        private func nested(_ key: Key) -> StructPostgresError {
            StructPostgresError(
                .unsupportedType,
                "property '\(key.stringValue)' of \(decoder.model) asks for a nested container; a grouped result holds single values",
                entity: decoder.rows.entity, table: decoder.rows.table, property: key.stringValue)
        }
    }
}
