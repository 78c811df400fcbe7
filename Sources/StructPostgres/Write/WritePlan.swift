import StructPostgresCore
import StructPostgresDriver

/// How a write is cut into statements: the one place that decides chunk sizes and slicing.
///
/// A table's rows go in one statement up to ``rowsPerStatement``, in chunks of that many beyond, so that memory
/// stays flat however large the batch. A call of more than ``rowsPerStatement`` models is converted and written a
/// slice at a time (``EntityWriter/writeInSlices(_:)``); a smaller one becomes one unit of work.
enum WritePlan {
    /// Rows per upsert statement: larger batches are split.
    static let rowsPerStatement = 10_000

    /// The rows of each statement writing `count` rows.
    static func chunks(_ count: Int) -> [Range<Int>] {
        stride(from: 0, to: count, by: rowsPerStatement).map { $0..<min(count, $0 + rowsPerStatement) }
    }

    /// Whether `count` models are written a slice at a time rather than converted into one unit of work.
    static func needsSlicing(_ count: Int) -> Bool { count > rowsPerStatement }

    /// How many statements writing `work` takes: one per chunk of each table, one per join-table relationship.
    static func statementCount(_ work: EntityContext) -> Int {
        work.joinSets.count + work.tables.reduce(0) { $0 + ($1.count + rowsPerStatement - 1) / rowsPerStatement }
    }
}
