import StructPostgresCore
import StructPostgresDriver

/// A query of figures, as the service receives it: `SELECT <keys>, <figures> FROM <table> WHERE ... GROUP BY <keys>
/// HAVING ... ORDER BY ... LIMIT ...`, or one row of figures over every matching row when it is not grouped.
struct AggregateQuery: Sendable {
    var filter: Filter?
    /// The properties the rows are grouped by (or why a key path names none).
    var keys: [Result<String, StructPostgresError>] = []
    /// Whether the query groups (`groups(of:by:...)`, even by an empty tuple of keys), or gives one row of figures.
    var grouped = false
    var aggregates: [AggregateSpec] = []
    var having: GroupFilterNode?
    var order: [GroupOrderTerm] = []
    var limit: Int?
    /// The rows are decoded by name into a `Decodable` of the caller's: every column needs a name of its own.
    var byName = false

    /// Why the query cannot run, found without the catalog: a key path that names no column, a `having` without a
    /// grouping key, a sort by a key the query does not group by, a negative limit, two results with one name.
    func refusal(entity: String, table: String) -> StructPostgresError? {
        func refused(_ message: String) -> StructPostgresError {
            StructPostgresError(.invalidValue, message, entity: entity, table: table)
        }
        for key in keys {
            if case .failure(var error) = key {
                error.message = "group by: \(error.message)"
                return error.with(entity: entity, table: table)
            }
        }
        let sorted = order.compactMap { term -> AggregateSpec? in
            if case .aggregate(let spec) = term.subject { return spec }
            return nil
        }
        let figures = aggregates + (having?.aggregates ?? []) + sorted
        if let refusal = figures.lazy.compactMap(\.refusal).first { return refusal.with(entity: entity, table: table) }
        let names = keys.compactMap { try? $0.get() }
        if having != nil, names.isEmpty {
            return refused(
                "having: a group filter needs a grouping: group by at least one key (groups(of:by:...)), or filter the rows with where:")
        }
        for term in order {
            guard case .key(let key) = term.subject else { continue }
            switch key {
            case .failure(var error):
                error.message = "sortedBy: \(error.message)"
                return error.with(entity: entity, table: table)
            case .success(let name) where !names.contains(name):
                return refused(
                    "sortedBy: '\(name)' is not a key the query groups by (\(names.isEmpty ? "it groups by no key" : "it groups by " + names.joined(separator: ", "))); sort by a grouping key or a figure"
                )
            case .success:
                break
            }
        }
        if let limit, limit < 0 { return refused("limit \(limit) is negative") }
        if byName {
            var seen = Set<String>()
            for name in names + aggregates.map(\.name) where !seen.insert(name).inserted {
                return refused("two results of the grouped query are named '\(name)': name figures apart with .named(_:)")
            }
        }
        return nil
    }

    /// The statement, every key and figure resolved against `description` and checked before anything is sent;
    /// `relationships`: those the filter's keys go through. Its columns are the keys, then the figures.
    func statement(_ description: EntityDescription, relationships: [String: ResolvedRelationship]) throws -> Statement {
        if let refusal = refusal(entity: description.entity, table: description.schema.table) { throw refusal }
        let table = description.schema.quotedTable
        let keyColumns = try keys.map { "\(table).\(SQLIdentifier.quote(try description.column(for: try $0.get())))" }
        var columns = zip(keyColumns, keys).map { "\($0) AS \(SQLIdentifier.quote((try? $1.get()) ?? ""))" }
        for aggregate in aggregates {
            columns.append("\(try expression(aggregate, description)) AS \(SQLIdentifier.quote(aggregate.name))")
        }
        var statement = Statement(sql: "SELECT \(columns.joined(separator: ", ")) FROM \(table)")
        try DatabaseSession.appendWhere(filter, description, relationships: relationships, &statement)
        if grouped, !keyColumns.isEmpty { statement.sql += " GROUP BY " + keyColumns.joined(separator: ", ") }
        if let having { statement.sql += " HAVING " + (try condition(having, negated: false, description, &statement)) }
        if !order.isEmpty {
            let terms = try order.map { term -> String in
                let subject =
                    switch term.subject {
                    case .aggregate(let spec): try expression(spec, description)
                    case .key(let key): "\(table).\(SQLIdentifier.quote(try description.column(for: try key.get())))"
                    }
                let nulls =
                    switch term.nulls {
                    case .default: ""
                    case .first: " NULLS FIRST"
                    case .last: " NULLS LAST"
                    }
                return subject + (term.ascending ? " ASC" : " DESC") + nulls
            }
            statement.sql += " ORDER BY " + terms.joined(separator: ", ")
        }
        if let limit { statement.sql += " LIMIT \(limit)" }
        return statement
    }

    /// The SQL of one figure, its column checked: `sum` and `average` need a number, `min` and `max` an order.
    func expression(_ aggregate: AggregateSpec, _ description: EntityDescription) throws -> String {
        guard let key = aggregate.key else { return "count(*)" }
        let name = try key.get()
        let columnName = try description.column(for: name)
        let column = description.schema.columns[columnName]!
        let sql = "\(description.schema.quotedTable).\(SQLIdentifier.quote(columnName))"
        func refused(_ reason: String) -> StructPostgresError {
            StructPostgresError(
                .invalidValue, "\(aggregate.label): \(reason)", entity: description.entity, table: description.schema.table,
                column: columnName, property: name)
        }
        switch aggregate.function {
        case .count: return "count(*)"
        case .countValues: return "count(\(sql))"
        case .sum, .average:
            guard Self.summable.contains(column.baseName) else {
                throw refused(
                    "column '\(columnName)' is \(column.typeName), not a number (smallint, integer, bigint, numeric, real or double precision)"
                )
            }
            let isFloat = column.baseName == "float4" || column.baseName == "float8"
            if aggregate.function == .sum { return isFloat ? "sum(\(sql)::float8)" : "sum(\(sql))" }
            // PostgreSQL's avg(double precision) also sums the squares (for the variance), which overflows for
            // values past 1e154 that Swift averages without trouble: the sum over the count is the same average.
            return isFloat ? "(sum(\(sql)::float8) / nullif(count(\(sql)), 0))" : "avg(\(sql))"
        case .min, .max:
            guard Self.ordered.contains(column.category), !column.isArray else {
                throw refused("column '\(columnName)' is \(column.typeName), which has no order \(aggregate.function.sqlName) can use")
            }
            return "\(aggregate.function.sqlName)(\(sql))"
        }
    }

    /// The column types `sum` and `average` take.
    static let summable: Set<String> = ["int2", "int4", "int8", "numeric", "float4", "float8"]
    /// The type categories `min` and `max` take: numbers, strings, dates and times, intervals, enums, network
    /// addresses, bit strings.
    static let ordered: Set<Character> = ["N", "S", "D", "T", "E", "I", "V"]

    /// The HAVING condition; `NOT` pushed down as in filters, so that a negated comparison keeps a NULL figure.
    private func condition(
        _ node: GroupFilterNode, negated: Bool, _ description: EntityDescription, _ statement: inout Statement
    ) throws -> String {
        switch node {
        case .compare(let aggregate, let op, let value):
            let subject = try expression(aggregate, description)
            let encoded = try RowEncoder.columnValue(of: value, property: aggregate.name)
            if let problem = encoded.encodingProblem {
                throw StructPostgresError(
                    .invalidValue, "having: \(aggregate.label): \(problem)", entity: description.entity, table: description.schema.table)
            }
            if encoded == .null {
                switch op {
                case .equal: return "\(subject) IS \(negated ? "NOT " : "")NULL"
                case .notEqual: return "\(subject) IS \(negated ? "" : "NOT ")NULL"
                default: return negated ? "TRUE" : "FALSE"
                }
            }
            var parameter = statement.bind(encoded)
            if encoded.wireType == .text, let column = try textCast(aggregate, description) { parameter += "::\(column)" }
            let symbols: [Filter.Operator: String] = [
                .equal: "=", .notEqual: "IS DISTINCT FROM", .less: "<", .lessOrEqual: "<=", .greater: ">", .greaterOrEqual: ">=",
            ]
            guard let symbol = symbols[op] else {
                throw StructPostgresError(
                    .invalidValue, "having: \(aggregate.label) cannot be compared with \(op.rawValue)", entity: description.entity,
                    table: description.schema.table)
            }
            let comparison = "\(subject) \(symbol) \(parameter)"
            return negated ? "(\(comparison)) IS NOT TRUE" : comparison
        case .all(let nodes), .any(let nodes):
            var isAll = if case .all = node { true } else { false }
            if negated { isAll.toggle() }
            let parts = try nodes.map { try condition($0, negated: negated, description, &statement) }
            return "(" + parts.joined(separator: isAll ? " AND " : " OR ") + ")"
        case .not(let inner):
            return try condition(inner, negated: !negated, description, &statement)
        }
    }

    /// The type a text value compared with `min` or `max` of a column that is not text is cast to (an enum).
    private func textCast(_ aggregate: AggregateSpec, _ description: EntityDescription) throws -> String? {
        guard aggregate.function == .min || aggregate.function == .max, let key = aggregate.key else { return nil }
        let column = description.schema.columns[try description.column(for: try key.get())]!
        return column.isStringLike ? nil : column.castName
    }
}
