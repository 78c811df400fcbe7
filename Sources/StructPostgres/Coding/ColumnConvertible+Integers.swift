import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// Integers decode from any integer column, refusing values that do not fit.
protocol IntegerColumn: ColumnConvertible, FixedWidthInteger {}

extension IntegerColumn {
    static func decode(_ cell: PostgresCell) throws -> Self {
        let wide: Int64
        switch cell.dataType {
        case .int2: wide = Int64(try cell.decode(Int16.self))
        case .int4: wide = Int64(try cell.decode(Int32.self))
        case .int8: wide = try cell.decode(Int64.self)
        case .numeric:
            guard let exact = Self(try NumericText.integerDigits(of: cell)) else {
                throw PostgresDecodingError.Code.failure
            }
            return exact
        default: throw PostgresDecodingError.Code.typeMismatch
        }
        guard let value = Self(exactly: wide) else { throw PostgresDecodingError.Code.failure }
        return value
    }
}

extension Int8: IntegerColumn {
    var columnValue: ColumnValue { .int2(Int16(self)) }
    static var wireType: WireType { .int2 }
}
extension UInt8: IntegerColumn {
    var columnValue: ColumnValue { .int2(Int16(self)) }
    static var wireType: WireType { .int2 }
}
extension Int16: IntegerColumn {
    var columnValue: ColumnValue { .int2(self) }
    static var wireType: WireType { .int2 }
}
extension UInt16: IntegerColumn {
    var columnValue: ColumnValue { .int4(Int32(self)) }
    static var wireType: WireType { .int4 }
}
extension Int32: IntegerColumn {
    var columnValue: ColumnValue { .int4(self) }
    static var wireType: WireType { .int4 }
}
extension UInt32: IntegerColumn {
    var columnValue: ColumnValue { .int8(Int64(self)) }
    static var wireType: WireType { .int8 }
}
extension Int64: IntegerColumn {
    var columnValue: ColumnValue { .int8(self) }
    static var wireType: WireType { .int8 }
}
extension Int: IntegerColumn {
    var columnValue: ColumnValue { .int8(Int64(self)) }
    static var wireType: WireType { .int8 }
}
/// Unsigned 64-bit values above `Int64.max` need a `numeric` column; in a `bigint` column they are refused.
extension UInt64: IntegerColumn {
    var columnValue: ColumnValue { .numeric(Decimal(self)) }
    static var wireType: WireType { .numeric }
}
extension UInt: IntegerColumn {
    var columnValue: ColumnValue { .numeric(Decimal(UInt64(self))) }
    static var wireType: WireType { .numeric }
}
