import Foundation
import PostgresNIO
import StructPostgresCore

/// One column of a batch, bound as a single one-dimensional array parameter (`$n::type[]`),
/// written in PostgreSQL's binary array format so NULL elements travel too.
package struct BinaryColumnArray: PostgresDynamicTypeEncodable {
    package let element: WireType
    package let values: [ColumnValue]

    package init(element: WireType, values: [ColumnValue]) { (self.element, self.values) = (element, values) }

    package var psqlType: PostgresDataType { Self.arrayType(of: element) }
    package var psqlFormat: PostgresFormat { .binary }

    package func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        if values.isEmpty {
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(Self.elementType(of: element).rawValue)
            return
        }
        var hasNulls = false
        var size = 20
        for value in values {
            switch value {
            case .null: hasNulls = true
            case .text(let string): size += 4 + string.utf8.count
            default: size += 12
            }
        }
        buffer.reserveCapacity(minimumWritableBytes: size)
        buffer.writeInteger(Int32(1))
        buffer.writeInteger(Int32(hasNulls ? 1 : 0))
        buffer.writeInteger(Self.elementType(of: element).rawValue)
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(Int32(1))
        for value in values {
            if case .null = value {
                buffer.writeInteger(Int32(-1))
            } else if let length = Self.fixedLength(of: value) {
                buffer.writeInteger(length)
                Self.writeElement(value, into: &buffer)
            } else {
                let lengthIndex = buffer.writerIndex
                buffer.writeInteger(Int32(0))
                let start = buffer.writerIndex
                Self.writeElement(value, into: &buffer)
                buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
            }
        }
    }

    /// An array encoded ahead of binding (on another thread than the statement's).
    package struct Encoded: PostgresDynamicTypeEncodable {
        package let element: WireType
        package let bytes: ByteBuffer
        /// What a statement shows of the array (in errors and logs).
        package let firstValues: [ColumnValue]

        package var psqlType: PostgresDataType { BinaryColumnArray.arrayType(of: element) }
        package var psqlFormat: PostgresFormat { .binary }

        package func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>)
        {
            buffer.writeImmutableBuffer(bytes)
        }
    }

    package func encoded() -> Encoded {
        var buffer = ByteBuffer()
        encode(into: &buffer, context: .default)
        return Encoded(element: element, bytes: buffer, firstValues: Array(values.prefix(5)))
    }

    /// The byte count ``writeElement(_:into:)`` writes for `value`, when known before writing it.
    private static func fixedLength(of value: ColumnValue) -> Int32? {
        switch value {
        case .uuid: 16
        case .text(let string): Int32(string.utf8.count)
        case .bool: 1
        case .int2: 2
        case .int4, .float4: 4
        case .int8, .float8, .timestamptz: 8
        default: nil
        }
    }

    package static func writeElement(_ value: ColumnValue, into buffer: inout ByteBuffer) {
        switch value {
        case .null: break
        case .uuid(let uuid):
            var bytes = uuid.uuid
            withUnsafeBytes(of: &bytes) { _ = buffer.writeBytes($0) }
        case .text(let string): buffer.writeString(string)
        case .bool(let bool): buffer.writeInteger(UInt8(bool ? 1 : 0))
        case .int2(let int): buffer.writeInteger(int)
        case .int4(let int): buffer.writeInteger(int)
        case .int8(let int): buffer.writeInteger(int)
        case .float4(let float): buffer.writeInteger(float.bitPattern)
        case .float8(let double): buffer.writeInteger(double.bitPattern)
        case .numeric(let decimal): decimal.encode(into: &buffer, context: .default)
        case .timestamptz(let date): buffer.writeInteger(TimestampCoding.microseconds(date))
        case .bytea(let data): buffer.writeBytes(data)
        case .jsonb(let json):
            buffer.writeInteger(UInt8(1))
            buffer.writeString(json)
        case .array: buffer.writeString(ArrayLiteral.render(value))
        }
    }

    package static func elementType(of wire: WireType) -> PostgresDataType {
        switch wire {
        case .uuid: .uuid
        case .text: .text
        case .bool: .bool
        case .int2: .int2
        case .int4: .int4
        case .int8: .int8
        case .float4: .float4
        case .float8: .float8
        case .numeric: .numeric
        case .timestamptz: .timestamptz
        case .bytea: .bytea
        case .jsonb: .jsonb
        }
    }

    package static func arrayType(of wire: WireType) -> PostgresDataType {
        switch wire {
        case .uuid: .uuidArray
        case .text: .textArray
        case .bool: .boolArray
        case .int2: .int2Array
        case .int4: .int4Array
        case .int8: .int8Array
        case .float4: .float4Array
        case .float8: .float8Array
        case .numeric: .numericArray
        case .timestamptz: .timestamptzArray
        case .bytea: .byteaArray
        case .jsonb: .jsonbArray
        }
    }
}

/// A single value bound as one parameter, e.g. in `WHERE column = $1`.
package struct BinaryColumnValue: PostgresDynamicTypeEncodable {
    package let value: ColumnValue

    package init(value: ColumnValue) { self.value = value }

    package var psqlType: PostgresDataType { BinaryColumnArray.elementType(of: value.wireType ?? .text) }
    package var psqlFormat: PostgresFormat { .binary }

    package func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        BinaryColumnArray.writeElement(value, into: &buffer)
    }
}
