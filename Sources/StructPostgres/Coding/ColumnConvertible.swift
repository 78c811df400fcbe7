import Foundation
import PostgresNIO

/// A Swift type with a fixed column representation: the leaves of the row encoder and decoder.
protocol ColumnConvertible {
    var columnValue: ColumnValue { get }
    static var wireType: WireType { get }
    /// Decodes from a non-null cell, or throws `PostgresDecodingError.Code`.
    static func decode(_ cell: PostgresCell) throws -> Self
}

extension ColumnConvertible where Self: PostgresDecodable {
    static func decode(_ cell: PostgresCell) throws -> Self { try cell.decode(Self.self) }
}

extension UUID: ColumnConvertible {
    var columnValue: ColumnValue { .uuid(self) }
    static var wireType: WireType { .uuid }
}
extension String: ColumnConvertible {
    var columnValue: ColumnValue { .text(self) }
    static var wireType: WireType { .text }
}
extension Bool: ColumnConvertible {
    var columnValue: ColumnValue { .bool(self) }
    static var wireType: WireType { .bool }
}
extension Double: ColumnConvertible {
    var columnValue: ColumnValue { .float8(self) }
    static var wireType: WireType { .float8 }
}
extension Float: ColumnConvertible {
    var columnValue: ColumnValue { .float4(self) }
    static var wireType: WireType { .float4 }
}
extension Decimal: ColumnConvertible {
    var columnValue: ColumnValue { .numeric(self) }
    static var wireType: WireType { .numeric }
    static func decode(_ cell: PostgresCell) throws -> Decimal {
        switch cell.dataType {
        case .numeric: return try cell.decode(Decimal.self)
        case .int2, .int4, .int8: return Decimal(try cell.decode(Int64.self))
        default: throw PostgresDecodingError.Code.typeMismatch
        }
    }
}
extension Date: ColumnConvertible {
    var columnValue: ColumnValue { .timestamptz(self) }
    static var wireType: WireType { .timestamptz }
    static func decode(_ cell: PostgresCell) throws -> Date {
        guard cell.dataType == .timestamptz || cell.dataType == .timestamp, var bytes = cell.bytes,
              let micros = bytes.readInteger(as: Int64.self) else {
            throw PostgresDecodingError.Code.typeMismatch
        }
        return Date(timeIntervalSince1970: TimestampCoding.epochOffset + Double(micros) / 1_000_000)
    }
}
extension Data: ColumnConvertible {
    var columnValue: ColumnValue { .bytea(self) }
    static var wireType: WireType { .bytea }
    static func decode(_ cell: PostgresCell) throws -> Data {
        guard cell.dataType == .bytea, let bytes = cell.bytes else { throw PostgresDecodingError.Code.typeMismatch }
        return Data(bytes.readableBytesView)
    }
}
extension URL: ColumnConvertible {
    var columnValue: ColumnValue { .text(absoluteString) }
    static var wireType: WireType { .text }
    static func decode(_ cell: PostgresCell) throws -> URL {
        guard let url = URL(string: try cell.decode(String.self)) else { throw PostgresDecodingError.Code.failure }
        return url
    }
}

/// Microseconds since 2000-01-01, PostgreSQL's timestamp representation.
enum TimestampCoding {
    static let epochOffset: Double = 946_684_800

    static func microseconds(_ date: Date) -> Int64 {
        Int64(((date.timeIntervalSince1970 - epochOffset) * 1_000_000).rounded())
    }
}
