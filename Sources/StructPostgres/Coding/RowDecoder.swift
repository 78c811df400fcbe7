import Foundation
import PostgresNIO

/// What the row decoder needs to know about the result it reads, built once per query.
final class RowLayout: @unchecked Sendable {
    let entity: String
    let schema: TableSchema
    let naming: ColumnNaming
    /// Column name -> index in the result row.
    let indexes: [String: Int]
    let keyColumns: [String]
    private var columnForKey: [String: String] = [:]
    /// Coding key -> index in the result row (-1: no such column), filled as keys are first met.
    private var indexForKey: [String: Int] = [:]
    /// The keys in the order the entity's `init(from:)` asked for them, and where the current row is in it:
    /// rows of one type ask in the same order, so a key is usually found by one comparison, without hashing.
    @exclusivity(unchecked) private var sequence: [(key: String, index: Int?)] = []
    @exclusivity(unchecked) private var cursor = 0
    /// One decoder for every row of the result, so that decoding a row allocates as little as possible.
    private lazy var decoder = RowDecoder(layout: self)

    /// Decodes `row` as an `E`.
    func decode<E: Decodable>(_ type: E.Type, _ row: PostgresRandomAccessRow) throws -> E {
        cursor = 0
        decoder.row = row
        return try E(from: decoder)
    }

    init(entity: String, schema: TableSchema, naming: ColumnNaming, selected: [String], keyColumns: [String]) {
        self.entity = entity
        self.schema = schema
        self.naming = naming
        self.indexes = Dictionary(uniqueKeysWithValues: selected.enumerated().map { ($1, $0) })
        self.keyColumns = keyColumns
    }

    /// The layout of `SELECT <every column in catalog order> FROM <the entity's table>`.
    convenience init(_ description: EntityDescription) {
        self.init(
            entity: description.entity, schema: description.schema, naming: description.naming,
            selected: description.schema.columnOrder, keyColumns: description.keyColumns)
    }

    func column(for key: some CodingKey) -> String {
        if let known = columnForKey[key.stringValue] { return known }
        let column = naming.column(for: key.stringValue)
        columnForKey[key.stringValue] = column
        return column
    }

    /// The result index of the column `key` maps to.
    func index(for key: some CodingKey) -> Int? {
        let name = key.stringValue
        if cursor > 0, sequence[cursor - 1].key == name { return sequence[cursor - 1].index }
        if cursor < sequence.count, sequence[cursor].key == name {
            cursor += 1
            return sequence[cursor - 1].index
        }
        let index: Int?
        if let known = indexForKey[name] {
            index = known >= 0 ? known : nil
        } else {
            index = indexes[column(for: key)]
            indexForKey[name] = index ?? -1
        }
        if cursor == sequence.count {
            sequence.append((name, index))
            cursor += 1
        }
        return index
    }

    /// `uuid=…` for the row, for error messages.
    func describeKey(of row: PostgresRandomAccessRow) -> String {
        keyColumns.map { column in
            guard let index = indexes[column] else { return "\(column)=?" }
            let cell = row[index]
            guard cell.bytes != nil else { return "\(column)=NULL" }
            if let uuid = try? cell.decode(UUID.self) { return "\(column)=\(uuid.uuidString)" }
            if let int = try? Int64.decode(cell) { return "\(column)=\(int)" }
            if let text = try? cell.decode(String.self) { return "\(column)='\(text)'" }
            return "\(column)=?"
        }.joined(separator: ", ")
    }
}

/// Decodes one result row into a `Decodable` entity through its `CodingKeys`; ``RowLayout`` keeps one per query.
final class RowDecoder: Decoder {
    unowned let layout: RowLayout
    @exclusivity(unchecked) var row: PostgresRandomAccessRow!
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(layout: RowLayout) { self.layout = layout }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        // The container holds the row and layout itself: reading them through the decoder would copy (retain
        // and release) them for every cell.
        KeyedDecodingContainer(RowDecodingContainer<Key>(decoder: self, layout: layout, row: row))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StructPostgresError(.unsupportedType, "an entity must decode from a keyed container (a struct)", entity: layout.entity)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw StructPostgresError(.unsupportedType, "an entity must decode from a keyed container (a struct)", entity: layout.entity)
    }
}

private struct RowDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RowDecoder
    let layout: RowLayout
    let row: PostgresRandomAccessRow
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { layout.indexes.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { layout.index(for: key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try cell(for: key).bytes == nil }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let index = layout.index(for: key) else {
            if let slot = T.self as? any RelationshipSlot.Type { return slot.unloadedSlot as! T }
            return try failure(
                "table '\(layout.schema.table)' has no column '\(layout.column(for: key))' for property '\(key.stringValue)'", key: key)
        }
        let cell = row[index]
        do {
            guard cell.bytes != nil else { throw PostgresDecodingError.Code.missingData }
            return try CellDecoding.decode(T.self, from: cell)
        } catch let error as StructPostgresError {
            throw error
        } catch {
            let column = layout.column(for: key)
            let found = layout.schema.columns[column]?.typeName ?? "\(cell.dataType)"
            let why = cell.bytes == nil ? "found NULL" : "found \(found)"
            return try failure(
                "column '\(column)' of table '\(layout.schema.table)' cannot be decoded as \(T.self) (\(why))",
                key: key)
        }
    }

    private func failure<T>(_ message: String, key: Key) throws -> T {
        throw StructPostgresError(
            .decoding, message, entity: layout.entity, table: layout.schema.table,
            column: layout.column(for: key), property: key.stringValue, rowKey: layout.describeKey(of: row))
    }

    private func cell(for key: Key) throws -> PostgresCell {
        guard let index = layout.index(for: key) else {
            return try failure(
                "table '\(layout.schema.table)' has no column '\(layout.column(for: key))' for property '\(key.stringValue)'", key: key)
        }
        return row[index]
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try failure("property '\(key.stringValue)' asks for a nested container; decode a Codable value instead", key: key)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try failure("property '\(key.stringValue)' asks for a nested container; decode a Codable value instead", key: key)
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
}

/// Decodes a non-null cell into any `Decodable` type.
enum CellDecoding {
    static func decode<T: Decodable>(_ type: T.Type, from cell: PostgresCell) throws -> T {
        // The common leaves first, dispatched statically: a protocol cast costs a conformance lookup per value.
        if T.self == String.self { return unsafeBitCast(try String.decode(cell), to: T.self) }
        if T.self == UUID.self { return unsafeBitCast(try UUID.decode(cell), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try Double.decode(cell), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try Int.decode(cell), to: T.self) }
        if T.self == Date.self { return unsafeBitCast(try Date.decode(cell), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try Bool.decode(cell), to: T.self) }
        if let leaf = T.self as? any ColumnConvertible.Type { return try leaf.decode(cell) as! T }
        if let array = T.self as? any ColumnArrayConvertible.Type { return try array.decode(cell) as! T }
        if let raw = T.self as? any RawRepresentable.Type, let value = try rawRepresentable(raw, cell) {
            return value as! T
        }
        return try json(T.self, cell)
    }

    private static func rawRepresentable<R: RawRepresentable>(_ type: R.Type, _ cell: PostgresCell) throws -> R? {
        guard let rawType = R.RawValue.self as? any ColumnConvertible.Type else { return nil }
        let raw = try rawType.decode(cell) as! R.RawValue
        guard let value = R(rawValue: raw) else { throw PostgresDecodingError.Code.failure }
        return value
    }

    /// jsonb/json cells decode as JSON; scalar cells decode through a JSON fragment (for single-value wrappers).
    private static func json<T: Decodable>(_ type: T.Type, _ cell: PostgresCell) throws -> T {
        guard var bytes = cell.bytes else { throw PostgresDecodingError.Code.missingData }
        let data: Data
        switch cell.dataType {
        case .jsonb:
            guard bytes.readInteger(as: UInt8.self) == 1 else { throw PostgresDecodingError.Code.failure }
            data = Data(bytes.readableBytesView)
        case .json:
            data = Data(bytes.readableBytesView)
        case .text, .varchar, .bpchar, .name:
            // JSON kept in a text column, else a plain string for a single-value type.
            let text = try cell.decode(String.self)
            if let first = text.first, first == "{" || first == "[", let decoded = try? jsonDecoder.decode(T.self, from: Data(text.utf8)) {
                return decoded
            }
            data = try JSONEncoder().encode(text)
        case .int2, .int4, .int8:
            data = Data(String(try Int64.decode(cell)).utf8)
        case .bool:
            data = Data((try cell.decode(Bool.self) ? "true" : "false").utf8)
        case .float4, .float8:
            data = Data("\(try cell.decode(Double.self))".utf8)
        default:
            throw PostgresDecodingError.Code.typeMismatch
        }
        return try jsonDecoder.decode(T.self, from: data)
    }

    private static var jsonDecoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
