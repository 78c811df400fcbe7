import Foundation
import StructPostgresCore
import StructPostgresDriver

/// An entity made without a row, to learn what its type stores: `init(from:)` runs against a decoder that answers
/// every key with a stand-in value of the type asked for, and records which keys were read as optional
/// (`decodeIfPresent`). Encoding the stand-in then gives the columns and the kind of value each holds, by the same
/// rules as a write.
struct EntityProbe<E: EntityProtocol> {
    /// The entity holding a stand-in value in every property.
    let entity: E
    /// The coding keys read with `decodeIfPresent`: properties that may be nil.
    let optionalKeys: Set<String>

    init() throws {
        let record = ProbeRecord()
        entity = try E(from: ProbeDecoder(record: record, depth: 0))
        optionalKeys = record.optionalKeys
    }
}

/// What the probe decoder learnt while the entity decoded itself (only the entity's own keys, not nested ones).
private final class ProbeRecord {
    var optionalKeys: Set<String> = []
}

/// A stand-in value of `T`: the values a row could hold for the common leaves, an empty collection, or what `T`
/// decodes from the probe itself; a trivial type that refuses every stand-in (an enum with raw values) is its first case.
private func standIn<T: Decodable>(_ type: T.Type, _ decoder: ProbeDecoder) throws -> T {
    if T.self == UUID.self { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)) as! T }
    if T.self == Date.self { return Date(timeIntervalSince1970: 0) as! T }
    if T.self == Decimal.self { return Decimal(0) as! T }
    if T.self == URL.self { return URL(string: "https://example.com")! as! T }
    if T.self == Data.self { return Data() as! T }
    do {
        return try T(from: decoder)
    } catch  where _isPOD(T.self) && MemoryLayout<T>.size > 0 {
        let zeroed = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.size, alignment: MemoryLayout<T>.alignment)
        defer { zeroed.deallocate() }
        zeroed.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
        return zeroed.load(as: T.self)
    }
}

/// A primitive read through the generic path, so that every key goes through one place.
private struct Probed<Value: Decodable>: Decodable {
    let value: Value
    init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Value.self) }
}

private struct ProbeDecoder: Decoder {
    let record: ProbeRecord
    let depth: Int
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ProbeKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { ProbeUnkeyedContainer(decoder: self) }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { ProbeSingleValueContainer(decoder: self) }

    /// The decoder of a nested value: deeper nesting than a row can hold is cut short.
    var nested: ProbeDecoder { ProbeDecoder(record: record, depth: depth + 1) }
}

private struct ProbeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard decoder.depth < 8 else { throw DecodingError.dataCorrupted(.init(codingPath: [key], debugDescription: "too deep")) }
        return try standIn(T.self, decoder.nested)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if decoder.depth == 0 { decoder.record.optionalKeys.insert(key.stringValue) }
        return try? decode(T.self, forKey: key)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(Probed<Bool>.self, forKey: key).value }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try decodeIfPresent(Probed<Bool>.self, forKey: key)?.value }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(Probed<String>.self, forKey: key).value }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try decodeIfPresent(Probed<String>.self, forKey: key)?.value
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(Probed<Double>.self, forKey: key).value }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try decodeIfPresent(Probed<Double>.self, forKey: key)?.value
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(Probed<Float>.self, forKey: key).value }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try decodeIfPresent(Probed<Float>.self, forKey: key)?.value
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(Probed<Int>.self, forKey: key).value }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try decodeIfPresent(Probed<Int>.self, forKey: key)?.value }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(Probed<Int8>.self, forKey: key).value }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try decodeIfPresent(Probed<Int8>.self, forKey: key)?.value }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(Probed<Int16>.self, forKey: key).value }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try decodeIfPresent(Probed<Int16>.self, forKey: key)?.value
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(Probed<Int32>.self, forKey: key).value }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try decodeIfPresent(Probed<Int32>.self, forKey: key)?.value
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(Probed<Int64>.self, forKey: key).value }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try decodeIfPresent(Probed<Int64>.self, forKey: key)?.value
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(Probed<UInt>.self, forKey: key).value }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try decodeIfPresent(Probed<UInt>.self, forKey: key)?.value }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(Probed<UInt8>.self, forKey: key).value }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try decodeIfPresent(Probed<UInt8>.self, forKey: key)?.value
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(Probed<UInt16>.self, forKey: key).value }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try decodeIfPresent(Probed<UInt16>.self, forKey: key)?.value
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(Probed<UInt32>.self, forKey: key).value }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try decodeIfPresent(Probed<UInt32>.self, forKey: key)?.value
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(Probed<UInt64>.self, forKey: key).value }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try decodeIfPresent(Probed<UInt64>.self, forKey: key)?.value
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(ProbeKeyedContainer<NestedKey>(decoder: decoder.nested))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { ProbeUnkeyedContainer(decoder: decoder.nested) }
    func superDecoder() throws -> any Decoder { decoder.nested }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder.nested }
}

/// One element, so that an array's element type shows in its encoding.
private struct ProbeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= 1 }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        return try standIn(T.self, decoder.nested)
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try decode(Probed<Bool>.self).value }
    mutating func decode(_ type: String.Type) throws -> String { try decode(Probed<String>.self).value }
    mutating func decode(_ type: Double.Type) throws -> Double { try decode(Probed<Double>.self).value }
    mutating func decode(_ type: Float.Type) throws -> Float { try decode(Probed<Float>.self).value }
    mutating func decode(_ type: Int.Type) throws -> Int { try decode(Probed<Int>.self).value }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decode(Probed<Int8>.self).value }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decode(Probed<Int16>.self).value }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decode(Probed<Int32>.self).value }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decode(Probed<Int64>.self).value }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decode(Probed<UInt>.self).value }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decode(Probed<UInt8>.self).value }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decode(Probed<UInt16>.self).value }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decode(Probed<UInt32>.self).value }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decode(Probed<UInt64>.self).value }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return KeyedDecodingContainer(ProbeKeyedContainer<NestedKey>(decoder: decoder.nested))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return ProbeUnkeyedContainer(decoder: decoder.nested)
    }

    mutating func superDecoder() throws -> any Decoder { decoder.nested }
}

private struct ProbeSingleValueContainer: SingleValueDecodingContainer {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { [] }

    /// `true`: a ``Related`` slot stays unloaded.
    func decodeNil() -> Bool { true }
    func decode(_ type: Bool.Type) throws -> Bool { false }
    func decode(_ type: String.Type) throws -> String { "" }
    func decode(_ type: Double.Type) throws -> Double { 0 }
    func decode(_ type: Float.Type) throws -> Float { 0 }
    func decode(_ type: Int.Type) throws -> Int { 0 }
    func decode(_ type: Int8.Type) throws -> Int8 { 0 }
    func decode(_ type: Int16.Type) throws -> Int16 { 0 }
    func decode(_ type: Int32.Type) throws -> Int32 { 0 }
    func decode(_ type: Int64.Type) throws -> Int64 { 0 }
    func decode(_ type: UInt.Type) throws -> UInt { 0 }
    func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
    func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
    func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
    func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try standIn(T.self, decoder.nested) }
}
