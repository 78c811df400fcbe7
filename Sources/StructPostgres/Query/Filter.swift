import Foundation

/// Which rows a fetch, count or delete applies to. Keys are property names or column names.
///
/// ```swift
/// let reviews: [Review] = try await service.fetch(where: .equal("bookID", book.uuid))
/// let admins = try await service.count(User.self, where: .equal("role", Role.admin) && .isNull("deletedAt"))
/// ```
public struct Filter: Sendable {
    indirect enum Node: Sendable {
        case compare(String, Comparison, any Encodable & Sendable)
        case isNull(String, Bool)
        case among(String, [any Encodable & Sendable])
        case all([Node])
        case any([Node])
        case not(Node)
    }

    enum Comparison: String, Sendable {
        case equal = "="
        case notEqual = "<>"
    }

    let node: Node

    /// Rows whose `key` equals `value`; `nil` matches rows where it is NULL.
    public static func equal(_ key: String, _ value: some Encodable & Sendable) -> Filter {
        Filter(node: .compare(key, .equal, value))
    }

    /// Rows whose `key` differs from `value`, NULL included (as NSPredicate's `!=` does).
    public static func notEqual(_ key: String, _ value: some Encodable & Sendable) -> Filter {
        Filter(node: .compare(key, .notEqual, value))
    }

    /// Rows whose `key` is one of `values` (`key = ANY($1)`: one parameter, whatever the count).
    /// Negated, it also matches rows where `key` is NULL, as NSPredicate's `NOT (key IN ...)` does.
    ///
    /// ```swift
    /// let books: [BookModel] = try await service.fetch(where: .in("uuid", ids))
    /// ```
    public static func `in`<Value: Encodable & Sendable>(_ key: String, _ values: [Value]) -> Filter {
        Filter(node: .among(key, values))
    }

    /// Rows where `key` is NULL.
    public static func isNull(_ key: String) -> Filter { Filter(node: .isNull(key, true)) }
    /// Rows where `key` is not NULL.
    public static func isNotNull(_ key: String) -> Filter { Filter(node: .isNull(key, false)) }

    public static func && (lhs: Filter, rhs: Filter) -> Filter { Filter(node: .all([lhs.node, rhs.node])) }
    public static func || (lhs: Filter, rhs: Filter) -> Filter { Filter(node: .any([lhs.node, rhs.node])) }
    public static prefix func ! (filter: Filter) -> Filter { Filter(node: .not(filter.node)) }

    /// The SQL condition, binding every value as a parameter of `statement`.
    ///
    /// `NOT` is pushed down to the comparisons, so that, as with NSPredicate, `!(.equal(k, x))` also matches
    /// rows where `k` is NULL (SQL's `NOT (k = x)` would be NULL there and drop them).
    func sql(for description: EntityDescription, into statement: inout Statement) throws -> String {
        try Self.sql(node, negated: false, description, &statement)
    }

    private static func sql(
        _ node: Node, negated: Bool, _ description: EntityDescription, _ statement: inout Statement
    ) throws -> String {
        switch node {
        case .compare(let key, let comparison, let value):
            let column = try description.column(for: key)
            let quoted = SQLIdentifier.quote(column)
            let equal = (comparison == .equal) != negated
            let encoded = try RowEncoder.columnValue(of: value, property: key)
            if let problem = encoded.encodingProblem {
                throw StructPostgresError(
                    .invalidValue, "filter on '\(key)': \(problem)", entity: description.entity,
                    table: description.schema.table, column: column, property: key)
            }
            guard encoded != .null else { return equal ? "\(quoted) IS NULL" : "\(quoted) IS NOT NULL" }
            let info = description.schema.columns[column]!
            let parameter = statement.bind(encoded)
            let needsCast = (encoded.wireType == .text && !info.isStringLike) || (encoded.wireType == .jsonb && info.baseName != "jsonb")
            let operand = needsCast ? "\(parameter)::\(info.castName)" : parameter
            return equal ? "\(quoted) = \(operand)" : "\(quoted) IS DISTINCT FROM \(operand)"
        case .among(let key, let values):
            let column = try description.column(for: key)
            let quoted = SQLIdentifier.quote(column)
            let encoded = try values.map { try RowEncoder.columnValue(of: $0, property: key) }
            if let problem = encoded.lazy.compactMap(\.encodingProblem).first {
                throw StructPostgresError(
                    .invalidValue, "filter on '\(key)': \(problem)", entity: description.entity,
                    table: description.schema.table, column: column, property: key)
            }
            let wire = encoded.first { $0 != .null }?.wireType ?? .text
            guard encoded.allSatisfy({ $0 == .null || ($0.wireType == wire && !$0.isArray) }) else {
                throw StructPostgresError(
                    .invalidValue, "filter on '\(key)': the values do not all have one type", entity: description.entity,
                    table: description.schema.table, column: column, property: key)
            }
            let info = description.schema.columns[column]!
            let parameter = statement.bind(array: BinaryColumnArray(element: wire, values: encoded))
            let needsCast = (wire == .text && !info.isStringLike) || (wire == .jsonb && info.baseName != "jsonb")
            let list = needsCast ? "\(parameter)::\(wire.sqlName)[]::\(info.castName)[]" : "\(parameter)::\(wire.sqlName)[]"
            return negated ? "(\(quoted) IS NULL OR NOT (\(quoted) = ANY(\(list))))" : "\(quoted) = ANY(\(list))"
        case .isNull(let key, let isNull):
            return "\(SQLIdentifier.quote(try description.column(for: key))) IS \(isNull != negated ? "" : "NOT ")NULL"
        case .all(let nodes), .any(let nodes):
            var isAll = if case .all = node { true } else { false }
            if negated { isAll.toggle() }
            let parts = try nodes.map { try sql($0, negated: negated, description, &statement) }
            return "(" + parts.joined(separator: isAll ? " AND " : " OR ") + ")"
        case .not(let inner):
            return try sql(inner, negated: !negated, description, &statement)
        }
    }
}
