import StructPostgresCore
import StructPostgresDriver

/// The first stage of a batch (see ``BatchColumns``): entities encoded into columns of values.
///
/// Every entity of a type encodes the same columns: the shape is learnt once, then only values are collected.
/// An entity whose `encode(to:)` varies is encoded in full and must give the first one's columns.
struct BatchEncoder {
    /// Encoded values, column by column, of the encoded columns and the properties they come from.
    struct Encoded {
        var names: [String]
        var properties: [String]
        var columns: [[ColumnValue]]
    }

    let description: EntityDescription
    /// Only these columns are needed (a delete: the unique key's, and the version's of an entity with one): encoding
    /// stops after the last of them. `nil`: every column.
    let onlyColumns: [String]?
    private let encoder: RowEncoder

    init(description: EntityDescription, only onlyColumns: [String]?) {
        self.description = description
        self.onlyColumns = onlyColumns
        encoder = RowEncoder(naming: description.naming)
    }

    /// Encodes `entities`, one after the other; errors name an entity by its index in the whole batch.
    func encode<E: EntityProtocol>(_ entities: ArraySlice<E>) throws -> Encoded {
        let (shape, first) = try start(entities)
        try collect(entities, (entities.startIndex + 1)..<entities.endIndex, into: first, shape)
        return encoded(shape, first.columns)
    }

    /// Encodes `entities` as ``encode(_:)`` does; `inParallel`: a batch of ``ParallelRows/minimum`` rows or more
    /// is encoded in two halves at once.
    func encode<E: EntityProtocol>(_ entities: ArraySlice<E>, inParallel: Bool) async throws -> Encoded {
        guard inParallel, entities.count >= ParallelRows.minimum else { return try encode(entities) }
        let (shape, first) = try start(entities)
        let rest = (entities.startIndex + 1)..<entities.endIndex
        var (columns, tail) = try await ParallelRows.halves(rest) { [self] rows in
            let half = rows.lowerBound == rest.lowerBound ? first : collector(shape, capacity: rows.count)
            try collect(entities, rows, into: half, shape)
            return half.columns
        }
        for index in columns.indices { columns[index].append(contentsOf: tail[index]) }
        return encoded(shape, columns)
    }

    /// The shape of the batch's rows, and a collector holding the first entity's values.
    private func start<E: EntityProtocol>(_ entities: ArraySlice<E>) throws -> (RowEncoder.Shape, RowEncoder.ColumnCollector) {
        var shape: RowEncoder.Shape
        if let learnt = RowEncoder.learntShape(of: E.self) {
            shape = learnt
        } else {
            let row = try encodeInFull(entities, entities.startIndex)
            RowEncoder.learn(row, of: E.self)
            shape = RowEncoder.Shape(columns: row.columns, properties: row.properties)
        }
        // The first entity settles the shape: one learnt from an earlier batch may not be this batch's.
        var first = collector(shape, capacity: entities.count)
        if let row = try append(entities, entities.startIndex, to: first, shape) {
            shape = RowEncoder.Shape(columns: row.columns, properties: row.properties)
            first = collector(shape, capacity: entities.count)
            first.append(values: row.values)
        }
        return (shape, first)
    }

    private func encoded(_ shape: RowEncoder.Shape, _ columns: [[ColumnValue]]) -> Encoded {
        let width = keyPrefix(shape) ?? shape.columns.count
        return Encoded(names: Array(shape.columns.prefix(width)), properties: Array(shape.properties.prefix(width)), columns: columns)
    }

    /// The number of leading columns a delete needs (through the last of ``onlyColumns``); `nil`: every column.
    private func keyPrefix(_ shape: RowEncoder.Shape) -> Int? {
        guard let onlyColumns else { return nil }
        return onlyColumns.map { shape.columns.firstIndex(of: $0) }.reduce(0 as Int?) { last, index in
            guard let last, let index else { return nil }
            return max(last, index + 1)
        }
    }

    private func collector(_ shape: RowEncoder.Shape, capacity: Int) -> RowEncoder.ColumnCollector {
        RowEncoder.ColumnCollector(naming: description.naming, shape: shape, prefix: keyPrefix(shape), capacity: capacity)
    }

    private func collect<E: EntityProtocol>(
        _ entities: ArraySlice<E>, _ rows: Range<Int>, into collector: RowEncoder.ColumnCollector, _ shape: RowEncoder.Shape
    ) throws {
        for index in rows {
            // A slice encoded ahead in a task is abandoned (cancelled) when the write before it fails.
            if (index - entities.startIndex) & 1023 == 1023, Task.isCancelled {
                throw StructPostgresError.from(CancellationError(), sql: nil)
            }
            _ = try append(entities, index, to: collector, shape)
        }
    }

    /// Appends entity `index`; when the first entity encodes other columns than `shape`, appends nothing and
    /// returns its row, encoded in full.
    private func append<E: EntityProtocol>(
        _ entities: ArraySlice<E>, _ index: Int, to collector: RowEncoder.ColumnCollector, _ shape: RowEncoder.Shape
    ) throws -> RowEncoder.Row? {
        if try atIndex(index, { try collector.append(entities[index]) }) { return nil }
        let row = try encodeInFull(entities, index)
        guard row.columns == shape.columns else {
            if index == entities.startIndex { return row }
            throw StructPostgresError(
                .unsupportedType, "entity at index \(index) encodes columns \(row.columns) but the first encodes \(shape.columns)",
                entity: description.entity, table: description.schema.table)
        }
        collector.append(values: row.values)
        return nil
    }

    private func encodeInFull<E: EntityProtocol>(_ entities: ArraySlice<E>, _ index: Int) throws -> RowEncoder.Row {
        try atIndex(index) { try encoder.encode(entities[index]) }
    }

    /// Runs `body`; an error it throws names the entity, the table and the entity's index.
    private func atIndex<T>(_ index: Int, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as StructPostgresError {
            error = error.with(entity: description.entity, table: description.schema.table)
            error.message += " (entity at index \(index))"
            throw error
        }
    }
}
