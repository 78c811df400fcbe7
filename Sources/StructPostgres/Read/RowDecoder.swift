import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// Decodes the rows of one result into `Decodable` entities through their `CodingKeys`. One decoder reads
/// every row of a result, so that decoding a row allocates as little as possible.
final class RowDecoder: Decoder {
    let layout: RowLayout
    @exclusivity(unchecked) private(set) var cells: ResultCells
    @exclusivity(unchecked) private(set) var row = 0
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(layout: RowLayout, cells: ResultCells = ResultCells()) {
        self.layout = layout
        self.cells = cells
    }

    /// Decodes row `row` of the result as an `E`.
    func decode<E: Decodable>(_ type: E.Type, row: Int) throws -> E {
        layout.startRow()
        self.row = row
        return try E(from: self)
    }

    /// `uuid=…` for row `row` of the result, for error messages.
    func describeKey(row: Int) -> String {
        layout.keyColumns.map { column in
            guard let index = layout.indexes[column] else { return "\(column)=?" }
            let cell = cells.cell(row: row, column: index)
            guard cell.bytes != nil else { return "\(column)=NULL" }
            if let uuid = try? cell.decode(UUID.self) { return "\(column)=\(uuid.uuidString)" }
            if let int = try? Int64.decode(cell) { return "\(column)=\(int)" }
            if let text = try? cell.decode(String.self) { return "\(column)='\(text)'" }
            return "\(column)=?"
        }.joined(separator: ", ")
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowDecodingContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StructPostgresError(.unsupportedType, "an entity must decode from a keyed container (a struct)", entity: layout.entity)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw StructPostgresError(.unsupportedType, "an entity must decode from a keyed container (a struct)", entity: layout.entity)
    }
}

/// Holds nothing but its decoder, so that the copies Codable makes of a container cost one retain.
private struct RowDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RowDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { decoder.layout.indexes.keys.compactMap { Key(stringValue: $0) } }

    /// Every key is "present": an optional property without a column fails with ``noColumn(_:)`` as its write
    /// does, rather than decoding as nil.
    func contains(_ key: Key) -> Bool { true }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let index = decoder.layout.index(for: key) else { throw noColumn(key) }
        return decoder.cells.bytes(row: decoder.row, column: index) == nil
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let index = decoder.layout.index(for: key) else {
            if let slot = T.self as? any RelationshipSlot.Type { return slot.unloadedSlot as! T }
            throw noColumn(key)
        }
        let row = decoder.row
        do {
            guard var bytes = decoder.cells.bytes(row: row, column: index) else { throw PostgresDecodingError.Code.missingData }
            return try CellDecoding.decode(T.self, &bytes, decoder.cells.dataTypes[index], decoder.cells.formats[index]) {
                decoder.cells.cell(row: row, column: index)
            }
        } catch let error as StructPostgresError {
            throw error
        } catch {
            let layout = decoder.layout
            let cell = decoder.cells.cell(row: row, column: index)
            let column = layout.column(for: key)
            let found = layout.schema.columns[column]?.typeName ?? "\(cell.dataType)"
            let why = cell.bytes == nil ? "found NULL" : "found \(found)"
            return try failure(
                "column '\(column)' of table '\(layout.schema.table)' cannot be decoded as \(T.self) (\(why))",
                key: key)
        }
    }

    /// The error a write gives for the same property (see ``BatchColumns``): the entity does not fit the table.
    private func noColumn(_ key: Key) -> StructPostgresError {
        let layout = decoder.layout
        let column = layout.column(for: key)
        // The table has it, so the result of a query of the caller's left it out.
        let missing =
            layout.schema.columns[column] == nil
            ? "which table '\(layout.schema.table)' does not have (columns: \(layout.schema.columnOrder.joined(separator: ", ")))"
            : "which the query's result does not have (its columns: \(layout.indexes.sorted { $0.value < $1.value }.map(\.key).joined(separator: ", "))); select it too"
        return StructPostgresError(
            .undefinedColumn,
            "property '\(key.stringValue)' maps to column '\(column)', \(missing)",
            sqlState: SQLState.undefinedColumn, entity: layout.entity, table: layout.schema.table, column: column,
            property: key.stringValue)
    }

    private func failure<T>(_ message: String, key: Key) throws -> T {
        let layout = decoder.layout
        throw StructPostgresError(
            .decoding, message, entity: layout.entity, table: layout.schema.table,
            column: layout.column(for: key), property: key.stringValue, rowKey: decoder.describeKey(row: decoder.row))
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try failure("property '\(key.stringValue)' asks for a nested container; decode a Codable value instead", key: key)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try failure("property '\(key.stringValue)' asks for a nested container; decode a Codable value instead", key: key)
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
}
