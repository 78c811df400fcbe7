import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// A Swift array stored in a PostgreSQL array column.
protocol ColumnArrayConvertible {
    var columnValue: ColumnValue { get }
    static var elementWireType: WireType { get }
    static func decode(_ cell: PostgresCell) throws -> Self
}

/// A type that may be an element of an array column (its optional included).
protocol ArrayElementConvertible {
    var elementValue: ColumnValue { get }
    static var elementWireType: WireType { get }
    static func decodeElement(_ cell: PostgresCell) throws -> Self
}

extension ArrayElementConvertible where Self: ColumnConvertible {
    var elementValue: ColumnValue { columnValue }
    static var elementWireType: WireType { wireType }
    static func decodeElement(_ cell: PostgresCell) throws -> Self {
        guard cell.bytes != nil else { throw PostgresDecodingError.Code.missingData }
        return try decode(cell)
    }
}

extension Optional: ArrayElementConvertible where Wrapped: ArrayElementConvertible & ColumnConvertible {
    var elementValue: ColumnValue { self?.columnValue ?? .null }
    static var elementWireType: WireType { Wrapped.wireType }
    static func decodeElement(_ cell: PostgresCell) throws -> Self {
        cell.bytes == nil ? nil : try Wrapped.decode(cell)
    }
}

extension UUID: ArrayElementConvertible {}
extension String: ArrayElementConvertible {}
extension Bool: ArrayElementConvertible {}
extension Double: ArrayElementConvertible {}
extension Float: ArrayElementConvertible {}
extension Decimal: ArrayElementConvertible {}
extension Date: ArrayElementConvertible {}
extension Data: ArrayElementConvertible {}
extension URL: ArrayElementConvertible {}
extension Int8: ArrayElementConvertible {}
extension UInt8: ArrayElementConvertible {}
extension Int16: ArrayElementConvertible {}
extension UInt16: ArrayElementConvertible {}
extension Int32: ArrayElementConvertible {}
extension UInt32: ArrayElementConvertible {}
extension Int64: ArrayElementConvertible {}
extension UInt64: ArrayElementConvertible {}
extension Int: ArrayElementConvertible {}
extension UInt: ArrayElementConvertible {}

extension Array: ColumnArrayConvertible where Element: ArrayElementConvertible {
    var columnValue: ColumnValue { .array(map(\.elementValue), element: Element.elementWireType) }
    static var elementWireType: WireType { Element.elementWireType }

    static func decode(_ cell: PostgresCell) throws -> [Element] {
        guard var buffer = cell.bytes, cell.format == .binary else { throw PostgresDecodingError.Code.missingData }
        guard let dimensions = buffer.readInteger(as: Int32.self), buffer.readInteger(as: Int32.self) != nil,
            let elementType = buffer.readInteger(as: UInt32.self)
        else {
            throw PostgresDecodingError.Code.typeMismatch
        }
        if dimensions == 0 { return [] }
        guard dimensions == 1, let count = buffer.readInteger(as: Int32.self), count >= 0,
            buffer.readInteger(as: Int32.self) != nil
        else {
            throw PostgresDecodingError.Code.typeMismatch
        }
        var result: [Element] = []
        result.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            guard let length = buffer.readInteger(as: Int32.self) else { throw PostgresDecodingError.Code.failure }
            let bytes = length < 0 ? nil : buffer.readSlice(length: Int(length))
            let element = PostgresCell(
                bytes: bytes, dataType: PostgresDataType(elementType), format: .binary,
                columnName: cell.columnName, columnIndex: index)
            result.append(try Element.decodeElement(element))
        }
        return result
    }
}
