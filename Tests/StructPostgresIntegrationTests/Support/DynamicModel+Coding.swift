import Foundation

/// How a dynamic model codes each kind of value: as a hand-written conformance would, one `decode`/`encode` of the
/// Swift type per property.
extension DynamicModel {
    typealias Container = KeyedDecodingContainer<Key>

    static func decodeIfPresent(_ kind: ValueKind, _ container: Container, _ key: Key) throws -> DynamicValue? {
        func get<T: Decodable>(_ type: T.Type) throws -> T? { try container.decodeIfPresent(T.self, forKey: key) }
        return switch kind {
        case .string: try get(String.self).map(DynamicValue.string)
        case .url: try get(URL.self).map(DynamicValue.url)
        case .role: try get(StoredRole.self).map(DynamicValue.role)
        case .int: try get(Int.self).map(DynamicValue.int)
        case .int8: try get(Int8.self).map(DynamicValue.int8)
        case .int16: try get(Int16.self).map(DynamicValue.int16)
        case .int32: try get(Int32.self).map(DynamicValue.int32)
        case .int64: try get(Int64.self).map(DynamicValue.int64)
        case .uint: try get(UInt.self).map(DynamicValue.uint)
        case .uint8: try get(UInt8.self).map(DynamicValue.uint8)
        case .uint16: try get(UInt16.self).map(DynamicValue.uint16)
        case .uint32: try get(UInt32.self).map(DynamicValue.uint32)
        case .uint64: try get(UInt64.self).map(DynamicValue.uint64)
        case .double: try get(Double.self).map(DynamicValue.double)
        case .float: try get(Float.self).map(DynamicValue.float)
        case .bool: try get(Bool.self).map(DynamicValue.bool)
        case .uuid: try get(UUID.self).map(DynamicValue.uuid)
        case .date: try get(Date.self).map(DynamicValue.date)
        case .decimal: try get(Decimal.self).map(DynamicValue.decimal)
        case .data: try get(Data.self).map(DynamicValue.data)
        case .json: try get(JSONAddress.self).map(DynamicValue.json)
        case .array(let element): try decodeArray(element, container, key, optional: true)
        }
    }

    static func decode(_ kind: ValueKind, _ container: Container, _ key: Key) throws -> DynamicValue {
        func get<T: Decodable>(_ type: T.Type) throws -> T { try container.decode(T.self, forKey: key) }
        return switch kind {
        case .string: .string(try get(String.self))
        case .url: .url(try get(URL.self))
        case .role: .role(try get(StoredRole.self))
        case .int: .int(try get(Int.self))
        case .int8: .int8(try get(Int8.self))
        case .int16: .int16(try get(Int16.self))
        case .int32: .int32(try get(Int32.self))
        case .int64: .int64(try get(Int64.self))
        case .uint: .uint(try get(UInt.self))
        case .uint8: .uint8(try get(UInt8.self))
        case .uint16: .uint16(try get(UInt16.self))
        case .uint32: .uint32(try get(UInt32.self))
        case .uint64: .uint64(try get(UInt64.self))
        case .double: .double(try get(Double.self))
        case .float: .float(try get(Float.self))
        case .bool: .bool(try get(Bool.self))
        case .uuid: .uuid(try get(UUID.self))
        case .date: .date(try get(Date.self))
        case .decimal: .decimal(try get(Decimal.self))
        case .data: .data(try get(Data.self))
        case .json: .json(try get(JSONAddress.self))
        case .array(let element): try decodeArray(element, container, key, optional: false)!
        }
    }

    /// An array, decoded as `[T]` of its element's Swift type (so the library sees the array type it stores).
    private static func decodeArray(_ element: ValueKind, _ container: Container, _ key: Key, optional: Bool) throws -> DynamicValue? {
        func get<T: Decodable>(_ type: T.Type, _ wrap: (T) -> DynamicValue) throws -> DynamicValue? {
            let array = optional ? try container.decodeIfPresent([T].self, forKey: key) : try container.decode([T].self, forKey: key)
            return array.map { .array($0.map(wrap)) }
        }
        return switch element {
        case .string: try get(String.self, DynamicValue.string)
        case .url: try get(URL.self, DynamicValue.url)
        case .int: try get(Int.self, DynamicValue.int)
        case .int8: try get(Int8.self, DynamicValue.int8)
        case .int16: try get(Int16.self, DynamicValue.int16)
        case .int32: try get(Int32.self, DynamicValue.int32)
        case .int64: try get(Int64.self, DynamicValue.int64)
        case .uint: try get(UInt.self, DynamicValue.uint)
        case .uint8: try get(UInt8.self, DynamicValue.uint8)
        case .uint16: try get(UInt16.self, DynamicValue.uint16)
        case .uint32: try get(UInt32.self, DynamicValue.uint32)
        case .uint64: try get(UInt64.self, DynamicValue.uint64)
        case .double: try get(Double.self, DynamicValue.double)
        case .float: try get(Float.self, DynamicValue.float)
        case .bool: try get(Bool.self, DynamicValue.bool)
        case .uuid: try get(UUID.self, DynamicValue.uuid)
        case .date: try get(Date.self, DynamicValue.date)
        case .decimal: try get(Decimal.self, DynamicValue.decimal)
        case .data: try get(Data.self, DynamicValue.data)
        case .role, .json, .array:
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "no array of \(element) in a dynamic model")
        }
    }

    static func encode(_ value: DynamicValue, _ container: inout KeyedEncodingContainer<Key>, _ key: Key) throws {
        switch value {
        case .string(let v): try container.encode(v, forKey: key)
        case .url(let v): try container.encode(v, forKey: key)
        case .role(let v): try container.encode(v, forKey: key)
        case .int(let v): try container.encode(v, forKey: key)
        case .int8(let v): try container.encode(v, forKey: key)
        case .int16(let v): try container.encode(v, forKey: key)
        case .int32(let v): try container.encode(v, forKey: key)
        case .int64(let v): try container.encode(v, forKey: key)
        case .uint(let v): try container.encode(v, forKey: key)
        case .uint8(let v): try container.encode(v, forKey: key)
        case .uint16(let v): try container.encode(v, forKey: key)
        case .uint32(let v): try container.encode(v, forKey: key)
        case .uint64(let v): try container.encode(v, forKey: key)
        case .double(let v): try container.encode(v, forKey: key)
        case .float(let v): try container.encode(v, forKey: key)
        case .bool(let v): try container.encode(v, forKey: key)
        case .uuid(let v): try container.encode(v, forKey: key)
        case .date(let v): try container.encode(v, forKey: key)
        case .decimal(let v): try container.encode(v, forKey: key)
        case .data(let v): try container.encode(v, forKey: key)
        case .json(let v): try container.encode(v, forKey: key)
        case .array(let elements): try encodeArray(elements, &container, key)
        }
    }

    /// An array, encoded as `[T]` of its elements' Swift type.
    private static func encodeArray(_ elements: [DynamicValue], _ container: inout KeyedEncodingContainer<Key>, _ key: Key) throws {
        guard let kind = Self.shape.properties.first(where: { $0.key == key.stringValue })?.kind, case .array(let element) = kind else {
            throw EncodingError.invalidValue(elements, .init(codingPath: [key], debugDescription: "not an array property"))
        }
        func put<T: Encodable>(_ extract: (DynamicValue) -> T?) throws {
            try container.encode(elements.map { extract($0)! }, forKey: key)
        }
        switch element {
        case .string: try put { if case .string(let v) = $0 { v } else { nil } }
        case .url: try put { if case .url(let v) = $0 { v } else { nil } }
        case .int: try put { if case .int(let v) = $0 { v } else { nil } }
        case .int8: try put { if case .int8(let v) = $0 { v } else { nil } }
        case .int16: try put { if case .int16(let v) = $0 { v } else { nil } }
        case .int32: try put { if case .int32(let v) = $0 { v } else { nil } }
        case .int64: try put { if case .int64(let v) = $0 { v } else { nil } }
        case .uint: try put { if case .uint(let v) = $0 { v } else { nil } }
        case .uint8: try put { if case .uint8(let v) = $0 { v } else { nil } }
        case .uint16: try put { if case .uint16(let v) = $0 { v } else { nil } }
        case .uint32: try put { if case .uint32(let v) = $0 { v } else { nil } }
        case .uint64: try put { if case .uint64(let v) = $0 { v } else { nil } }
        case .double: try put { if case .double(let v) = $0 { v } else { nil } }
        case .float: try put { if case .float(let v) = $0 { v } else { nil } }
        case .bool: try put { if case .bool(let v) = $0 { v } else { nil } }
        case .uuid: try put { if case .uuid(let v) = $0 { v } else { nil } }
        case .date: try put { if case .date(let v) = $0 { v } else { nil } }
        case .decimal: try put { if case .decimal(let v) = $0 { v } else { nil } }
        case .data: try put { if case .data(let v) = $0 { v } else { nil } }
        case .role, .json, .array:
            throw EncodingError.invalidValue(elements, .init(codingPath: [key], debugDescription: "no array of \(element)"))
        }
    }
}
