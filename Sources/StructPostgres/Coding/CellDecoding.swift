import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// Decodes non-null cells into any `Decodable` type: the leaves of the row decoder.
enum CellDecoding {
    /// Decodes the bytes of a non-null cell; `cell` makes the `PostgresCell` the less common types decode from.
    static func decode<T: Decodable>(
        _ type: T.Type, _ bytes: inout ByteBuffer, _ dataType: PostgresDataType, _ format: PostgresFormat,
        cell: () -> PostgresCell
    ) throws -> T {
        // The common leaves in the common column types first, dispatched statically and read straight from the
        // bytes: a protocol cast costs a conformance lookup per value.
        let context = PostgresDecodingContext.default
        if T.self == String.self {
            return unsafeBitCast(try String(from: &bytes, type: dataType, format: format, context: context), to: T.self)
        }
        if T.self == UUID.self {
            return unsafeBitCast(try UUID(from: &bytes, type: dataType, format: format, context: context), to: T.self)
        }
        if T.self == Bool.self {
            return unsafeBitCast(try Bool(from: &bytes, type: dataType, format: format, context: context), to: T.self)
        }
        if format == .binary {
            switch dataType {
            case .float8 where T.self == Double.self:
                return unsafeBitCast(try Double(from: &bytes, type: dataType, format: format, context: context), to: T.self)
            case .int8 where T.self == Int.self:
                return unsafeBitCast(try Int(from: &bytes, type: dataType, format: format, context: context), to: T.self)
            case .timestamptz where T.self == Date.self, .timestamp where T.self == Date.self:
                guard bytes.readableBytes == 8, let micros = bytes.readInteger(as: Int64.self) else {
                    throw PostgresDecodingError.Code.failure
                }
                return unsafeBitCast(TimestampCoding.date(microseconds: micros), to: T.self)
            default: break
            }
        }
        return try decode(T.self, from: cell())
    }

    private static func decode<T: Decodable>(_ type: T.Type, from cell: PostgresCell) throws -> T {
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
