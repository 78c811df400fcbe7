import Logging
import PostgresNIO
import Synchronization
import StructPostgresCore

/// One SQL statement: text, bound values with their types and, for opt-in logging, a rendering of those values.
package struct Statement: Sendable {
    package var sql: String { didSet { preparedKey = nil } }
    package var bindings = PostgresBindings()
    package var types: [PostgresDataType] = [] { didSet { preparedKey = nil } }
    package var values: [ColumnValue] = []
    /// Planned on every execution instead of prepared once: set for statements that match a set of keys
    /// (`= ANY($1)`). A prepared statement's generic plan assumes a short array and probes an index once per
    /// key, where the plan for thousands of keys hashes them and scans the table once.
    package var plannedPerExecution = false
    /// Sent even when the task has been cancelled, and not cancelled itself: the `ROLLBACK` that cleans up.
    package var runsWhenCancelled = false
    /// The key of `sql` and `types` among prepared statements, when a plan made it once for all its calls; a
    /// change to either drops it.
    package var preparedKey: PreparedStatementRegistry.Key?

    /// Binds `value`; returns its placeholder (`$1`, ...).
    package mutating func bind(_ value: ColumnValue) -> String {
        append(value)
        return "$\(bindings.count)"
    }

    /// Binds `value` where the text already holds its placeholder.
    package mutating func append(_ value: ColumnValue) {
        values.append(value)
        if case .null = value {
            bindings.appendNull()
            types.append(.null)
        } else {
            let encodable = BinaryColumnValue(value: value)
            bindings.append(encodable)
            types.append(encodable.psqlType)
        }
    }

    /// Binds `value`, declaring a null as `type`, so that a row with a null and one without share a statement.
    package mutating func append(_ value: ColumnValue, declaredAs type: WireType) {
        append(value)
        if case .null = value { types[types.count - 1] = BinaryColumnArray.elementType(of: type) }
    }

    package mutating func bind(cells: RawCellArray) -> String {
        bindings.append(cells)
        types.append(cells.psqlType)
        return "$\(bindings.count)"
    }

    package mutating func bind(array: BinaryColumnArray) -> String {
        bind(array, shown: .array(Array(array.values.prefix(5)), element: array.element))
    }

    package mutating func bind(array: BinaryColumnArray.Encoded) -> String {
        bind(array, shown: .array(array.firstValues, element: array.element))
    }

    /// Binds an array parameter; `shown` is what errors and logs show of it.
    private mutating func bind(_ array: some PostgresDynamicTypeEncodable, shown: ColumnValue) -> String {
        values.append(shown)
        bindings.append(array)
        types.append(array.psqlType)
        return "$\(bindings.count)"
    }
}

extension Statement {
    /// A statement of `sql`, with what is already bound.
    package init(
        sql: String, bindings: PostgresBindings = PostgresBindings(), types: [PostgresDataType] = [], values: [ColumnValue] = [],
        plannedPerExecution: Bool = false, preparedKey: PreparedStatementRegistry.Key? = nil
    ) {
        (self.sql, self.bindings, self.types, self.values) = (sql, bindings, types, values)
        (self.plannedPerExecution, self.preparedKey) = (plannedPerExecution, preparedKey)
    }

    /// A statement with room for `parameters` values.
    package init(sql: String, parameters: Int) {
        self.init(sql: sql)
        bindings = PostgresBindings(capacity: parameters)
        types.reserveCapacity(parameters)
        values.reserveCapacity(parameters)
    }
}
