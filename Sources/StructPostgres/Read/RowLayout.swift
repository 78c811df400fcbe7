import PostgresNIO
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// What the row decoder needs to know about the result it reads, built once per query.
final class RowLayout: @unchecked Sendable {
    /// The description of the entity read (a reference: a layout is made per query, and copies nothing of it).
    let description: EntityDescription
    var entity: String { description.entity }
    var schema: TableSchema { description.schema }
    var naming: ColumnNaming { description.naming }
    var keyColumns: [String] { description.keyColumns }
    /// Column name -> index in the result row.
    let indexes: [String: Int]
    private var columnForKey: [String: String] = [:]
    /// Coding key -> index in the result row (-1: no such column), filled as keys are first met.
    private var indexForKey: [String: Int] = [:]
    /// The keys in the order the entity's `init(from:)` asked for them, and where the current row is in it:
    /// rows of one type ask in the same order, so a key is usually found by one comparison, without hashing.
    @exclusivity(unchecked) private var sequence: [(key: String, index: Int?)] = []
    @exclusivity(unchecked) private var cursor = 0

    /// Where the order of keys is kept for the next layouts of this description (a select of every column).
    private let keyOrder: LearntKeyOrder?

    /// Starts a row: its keys are looked for from the start of the learnt order.
    func startRow() { cursor = 0 }

    /// The layout of `SELECT <every column in catalog order> ... FROM <the entity's table>`: the order of keys
    /// learnt from an earlier result of it, if any, is known from the start.
    convenience init(_ description: EntityDescription) {
        self.init(description, indexes: description.schema.columnIndexes, keyOrder: description.keyOrder)
    }

    /// The layout of a result whose columns are `columns`, in order (a query of the caller's); a name given twice
    /// is read from its first column.
    convenience init(_ description: EntityDescription, columns: [String]) {
        var indexes: [String: Int] = [:]
        for (index, name) in columns.enumerated() where indexes[name] == nil { indexes[name] = index }
        self.init(description, indexes: indexes, keyOrder: nil)
    }

    private init(_ description: EntityDescription, indexes: [String: Int], keyOrder: LearntKeyOrder?) {
        self.description = description
        self.indexes = indexes
        self.keyOrder = keyOrder
        sequence = keyOrder?.keys ?? []
    }

    /// A layout of the same result for a second decoder (each decoder learns the order of keys in its own).
    func copy(_ description: EntityDescription) -> RowLayout { RowLayout(description, indexes: indexes, keyOrder: keyOrder) }

    /// After a result was decoded: keeps the order of keys learnt, for the later layouts of the description.
    func rememberKeyOrder() {
        if let keyOrder, !sequence.isEmpty { keyOrder.remember(sequence) }
    }

    func column(for key: some CodingKey) -> String {
        if let known = columnForKey[key.stringValue] { return known }
        let column = naming.column(for: key.stringValue)
        columnForKey[key.stringValue] = column
        return column
    }

    /// The result index of the column `key` maps to.
    func index(for key: some CodingKey) -> Int? {
        let name = key.stringValue
        if cursor > 0, sequence[cursor - 1].key == name { return sequence[cursor - 1].index }
        if cursor < sequence.count, sequence[cursor].key == name {
            cursor += 1
            return sequence[cursor - 1].index
        }
        let index: Int?
        if let known = indexForKey[name] {
            index = known >= 0 ? known : nil
        } else {
            index = indexes[column(for: key)]
            indexForKey[name] = index ?? -1
        }
        if cursor == sequence.count {
            sequence.append((name, index))
            cursor += 1
        }
        return index
    }
}
