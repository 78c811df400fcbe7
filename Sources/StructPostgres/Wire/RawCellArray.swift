import NIOCore
import PostgresNIO

/// Cells of one type sent back as one array parameter, in binary, without decoding them first.
struct RawCellArray: PostgresDynamicTypeEncodable {
    let elementType: PostgresDataType
    let values: [ByteBuffer]

    /// Unspecified: the statement's cast (`$1::uuid[]`) gives the type.
    var psqlType: PostgresDataType { PostgresDataType(0) }
    var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
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
