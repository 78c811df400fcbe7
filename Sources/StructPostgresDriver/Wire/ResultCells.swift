import PostgresNIO
import StructPostgresCore

/// The cells of a result's rows in one row-major array, with each column's name, type and format.
///
/// Read once from PostgresNIO's rows, so that decoding and relationship loading index cells directly,
/// without an array and a `PostgresCell` per row. Its readers are inlinable, and the type `@usableFromInline`,
/// without which the compiler (Swift 6.3) inlines no member of a `package` type into another module: the module
/// above reads every cell through them, and a call into this module per cell (with a retain and a release of each
/// of the arrays to pass `self`) cost W2's fetch of 10,000 books a fifth of its speed.
@usableFromInline package struct ResultCells: Sendable {
    @usableFromInline package private(set) var names: [String] = []
    @usableFromInline package private(set) var dataTypes: [PostgresDataType] = []
    @usableFromInline package private(set) var formats: [PostgresFormat] = []
    /// Read by the module above through ``bytes(row:column:)`` only.
    @usableFromInline private(set) var values: [ByteBuffer?] = []
    package private(set) var count = 0
    /// Bytes of cell data held.
    package private(set) var byteCount = 0

    package init() {}

    /// Collects the rows of `sequence` as they arrive.
    package init(_ sequence: RowSequence) async throws {
        for try await row in sequence { append(row) }
    }

    /// Adds the cells of `row`; the first row also gives the columns' names, types and formats.
    package mutating func append(_ row: PostgresRow) {
        let first = names.isEmpty
        if first {
            // Room for the first rows at once: a point query's few rows then grow no array.
            names.reserveCapacity(row.count)
            dataTypes.reserveCapacity(row.count)
            formats.reserveCapacity(row.count)
            values.reserveCapacity(row.count * 4)
        }
        for cell in row {
            if first {
                names.append(cell.columnName)
                dataTypes.append(cell.dataType)
                formats.append(cell.format)
            }
            byteCount &+= cell.bytes?.readableBytes ?? 0
            values.append(cell.bytes)
        }
        count += 1
    }

    /// The bytes of a cell; `nil` for NULL.
    @inlinable @inline(__always)
    package func bytes(row: Int, column: Int) -> ByteBuffer? { values[row &* names.count &+ column] }

    @inlinable
    package func cell(row: Int, column: Int) -> PostgresCell {
        PostgresCell(
            bytes: bytes(row: row, column: column), dataType: dataTypes[column], format: formats[column],
            columnName: names[column], columnIndex: column)
    }
}

/// The rows of a prepared statement, as PostgresNIO hands them over.
package typealias RowSequence = AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow>
