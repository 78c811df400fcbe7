import NIOCore
import PostgresNIO
import StructPostgresCore

/// Cells of one type sent back as one array parameter, in binary, without decoding them first.
package struct RawCellArray: PostgresDynamicTypeEncodable {
    package let elementType: PostgresDataType
    package let values: [ByteBuffer]

    package init(elementType: PostgresDataType, values: [ByteBuffer]) { (self.elementType, self.values) = (elementType, values) }

    /// Unspecified: the statement's cast (`$1::uuid[]`) gives the type.
    package var psqlType: PostgresDataType { PostgresDataType(0) }
    package var psqlFormat: PostgresFormat { .binary }

    package func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        buffer.writeInteger(Int32(1))
        buffer.writeInteger(Int32(0))
        buffer.writeInteger(elementType.rawValue)
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(Int32(1))
        for var value in values {
            buffer.writeInteger(Int32(value.readableBytes))
            buffer.writeBuffer(&value)
        }
    }
}
