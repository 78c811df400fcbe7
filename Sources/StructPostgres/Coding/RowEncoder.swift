import Foundation
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// Turns an `Encodable` entity into its columns, through the entity's `CodingKeys`.
///
/// Leaves with a fixed column type (UUID, String, integers, Date, Data, ...) map directly;
/// `RawRepresentable` values store their raw value; anything else is stored as `jsonb`.
struct RowEncoder {
    let naming: ColumnNaming

    struct Row {
        var columns: [String] = []
        var properties: [String] = []
        var values: [ColumnValue] = []
    }

    /// The columns of a row without its values: what every row of one entity type encodes.
    struct Shape: Sendable {
        let columns: [String]
        let properties: [String]
    }

    /// Encodes `entity`; given the `expected` shape of its type, only the values are collected, each key checked
    /// against the shape (an entity whose `encode(to:)` varies is encoded again in full).
    func encode<E: Encodable>(_ entity: E, expecting expected: Shape? = nil) throws -> Row {
        if let expected {
            guard let values = try values(of: entity, shape: expected) else { return try encode(entity) }
            return Row(columns: expected.columns, properties: expected.properties, values: values)
        }
        let encoder = RowEncodingEncoder(naming: naming, expected: nil)
        try entity.encode(to: encoder)
        if let problem = encoder.problem { throw problem }
        return encoder.row
    }

    /// The values of `entity` in the order of `shape`, or `nil` when it encodes other keys.
    func values<E: Encodable>(of entity: E, shape: Shape) throws -> [ColumnValue]? {
        let encoder = RowEncodingEncoder(naming: naming, expected: shape)
        try entity.encode(to: encoder)
        if let problem = encoder.problem { throw problem }
        guard !encoder.deviated, encoder.row.values.count == shape.properties.count else { return nil }
        return encoder.row.values
    }

    /// Collects the values of many entities of one shape column by column, with one encoder for all of them:
    /// what batches use. With `prefix`, only that many columns of the shape are collected and encoding stops
    /// there (a delete needs the key only).
    struct ColumnCollector {
        private let encoder: RowEncodingEncoder

        init(naming: ColumnNaming, shape: Shape, prefix: Int?, capacity: Int) {
            encoder = RowEncodingEncoder(naming: naming, expected: shape)
            let width = prefix ?? shape.columns.count
            encoder.collectsColumns = true
            encoder.columns = (0..<width).map { _ in
                var column: [ColumnValue] = []
                column.reserveCapacity(capacity)
                return column
            }
        }

        /// Appends the values of `entity`; returns `false` when it does not encode as the shape. When it returns
        /// `false` or throws, nothing of `entity` was appended.
        func append<E: Encodable>(_ entity: E) throws -> Bool {
            encoder.startRow()
            do {
                try entity.encode(to: encoder)
            } catch {
                // Once the encoder has stopped the row, whatever `encode(to:)` throws (the stop itself, or an
                // error wrapping it) only ends the row.
                guard encoder.stopped else {
                    encoder.dropRow()
                    throw error
                }
            }
            if let problem = encoder.problem {
                encoder.dropRow()
                throw problem
            }
            guard !encoder.deviated, encoder.position == encoder.columns.count else {
                encoder.dropRow()
                return false
            }
            return true
        }

        /// Appends values encoded another way, one per collected column.
        func append(values: [ColumnValue]) {
            for index in encoder.columns.indices { encoder.columns[index].append(values[index]) }
        }

        var columns: [[ColumnValue]] { encoder.columns }
    }

    /// The shapes learnt from the first encoded row of each entity type, read by every later encoding of it.
    private static let learntShapes = Guarded<[ObjectIdentifier: Shape]>([:])

    static func learntShape<E>(of type: E.Type) -> Shape? { learntShapes.withLock { $0[ObjectIdentifier(type)] } }

    static func learn<E>(_ row: Row, of type: E.Type) {
        learntShapes.withLock { $0[ObjectIdentifier(type)] = Shape(columns: row.columns, properties: row.properties) }
    }

    /// The column value of one `Encodable` value, e.g. a filter argument.
    static func columnValue<T: Encodable>(of value: T, property: String) throws -> ColumnValue {
        // The common leaves first, without a protocol cast (a conformance lookup per value).
        if T.self == UUID.self { return .uuid(unsafeBitCast(value, to: UUID.self)) }
        if T.self == String.self { return .text(NFC.normalize(unsafeBitCast(value, to: String.self))) }
        if T.self == Date.self { return .timestamptz(unsafeBitCast(value, to: Date.self)) }
        if let encoded = value as? EncodedValue { return encoded.value }
        if let captured = value as? PredicateValue { return try columnValue(of: captured.value, property: property) }
        if let leaf = value as? any ColumnConvertible { return leaf.columnValue }
        if let array = value as? any ColumnArrayConvertible { return array.columnValue }
        if let raw = value as? any RawRepresentable, let leaf = raw.rawValue as? any ColumnConvertible {
            return leaf.columnValue
        }
        return try jsonValue(of: value, property: property)
    }

    private static func jsonValue<T: Encodable>(of value: T, property: String) throws -> ColumnValue {
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            data = try encoder.encode(value)
        } catch {
            // The context's description, not the error's: the error quotes the value itself.
            let reason =
                (error as? EncodingError).map { error -> String in
                    if case .invalidValue(_, let context) = error { return context.debugDescription }
                    return "encoding failed"
                } ?? "encoding failed"
            throw StructPostgresError(
                .unsupportedType, "property '\(property)' of type \(T.self) cannot be stored as JSON: \(reason)",
                property: property)
        }
        let text = String(decoding: data, as: UTF8.self)
        switch data.first {
        case UInt8(ascii: "{"), UInt8(ascii: "["): return .jsonb(text)
        case UInt8(ascii: "\""): return .text(NFC.normalize(try JSONDecoder().decode(String.self, from: data)))
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(text == "true")
        default:
            if let int = Int64(text) { return .int8(int) }
            if let decimal = Decimal(string: text) { return .numeric(decimal) }
            return .jsonb(text)
        }
    }
}

/// A value already turned into its column value (an element of an array argument of a predicate).
struct EncodedValue: Encodable, Sendable {
    let value: ColumnValue
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value.keyDescription)
    }
}

private final class RowEncodingEncoder: Encoder {
    let naming: ColumnNaming
    let expected: RowEncoder.Shape?
    var deviated = false
    /// Column mode (``RowEncoder/ColumnCollector``): values go to ``columns``, and the row stops (``Stop`` is
    /// thrown) after the last collected column, or at the first key that is not the shape's.
    var collectsColumns = false
    private(set) var stopped = false
    struct Stop: Error {}
    /// One entity's row, when not collecting columns.
    var row = RowEncoder.Row()
    /// The values collected so far, column by column (``RowEncoder/ColumnCollector``).
    @exclusivity(unchecked) var columns: [[ColumnValue]] = []
    /// The values of the current row collected so far.
    var position = 0
    var problem: StructPostgresError?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(naming: ColumnNaming, expected: RowEncoder.Shape?) {
        self.naming = naming
        self.expected = expected
        row.values.reserveCapacity(expected?.properties.count ?? 8)
    }

    func startRow() {
        position = 0
        deviated = false
        stopped = false
        problem = nil
    }

    /// Removes the values of the current row from the columns.
    func dropRow() {
        for index in 0..<min(position, columns.count) { columns[index].removeLast() }
        position = 0
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        problem = problem ?? StructPostgresError(.unsupportedType, "an entity must encode as a keyed container (a struct), not an array")
        return DiscardingUnkeyedContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        problem =
            problem ?? StructPostgresError(.unsupportedType, "an entity must encode as a keyed container (a struct), not a single value")
        return DiscardingUnkeyedContainer()
    }

    func append(_ key: some CodingKey, _ value: ColumnValue) throws {
        if collectsColumns { return try collect(key, value) }
        guard let expected else {
            row.properties.append(key.stringValue)
            row.columns.append(naming.column(for: key.stringValue))
            row.values.append(value)
            return
        }
        let position = row.values.count
        if position >= expected.properties.count || expected.properties[position] != key.stringValue { deviated = true }
        row.values.append(value)
    }

    private func collect(_ key: some CodingKey, _ value: ColumnValue) throws {
        if stopped { throw Stop() }
        guard position < columns.count, expected!.properties[position] == key.stringValue else {
            // A key beyond the shape, or not the shape's next one (a key past a collected prefix never gets here).
            deviated = true
            stopped = true
            throw Stop()
        }
        columns[position].append(value)
        position += 1
        if position == columns.count, columns.count < expected!.properties.count {
            stopped = true
            throw Stop()
        }
    }
}

private struct RowContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RowEncodingEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { try encoder.append(key, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try encoder.append(key, .bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { try encoder.append(key, .text(NFC.normalize(value))) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try encoder.append(key, .float8(value)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try encoder.append(key, .float4(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encoder.append(key, value.columnValue) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        // The common leaves first, without a protocol cast (a conformance lookup per value).
        if T.self == UUID.self { return try encoder.append(key, .uuid(unsafeBitCast(value, to: UUID.self))) }
        if T.self == Date.self { return try encoder.append(key, .timestamptz(unsafeBitCast(value, to: Date.self))) }
        if let leaf = value as? any ColumnConvertible { return try encoder.append(key, leaf.columnValue) }
        if value is any RelationshipSlot { return }
        try encoder.append(key, try RowEncoder.columnValue(of: value, property: key.stringValue))
    }

    // Synthesized `encode(to:)` skips nil optionals through `encodeIfPresent`; a row needs every column.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try encodeOptional(value, forKey: key) }

    private mutating func encodeOptional<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        unsupported(key)
        return KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>())
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        unsupported(key)
        return DiscardingUnkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { encoder }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        unsupported(key)
        return encoder
    }

    private func unsupported(_ key: Key) {
        encoder.problem =
            encoder.problem
            ?? StructPostgresError(
                .unsupportedType,
                "property '\(key.stringValue)' uses a nested container in encode(to:); encode a Codable value instead, which is stored as jsonb",
                property: key.stringValue)
    }
}
