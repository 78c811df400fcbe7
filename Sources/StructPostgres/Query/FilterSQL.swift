import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Turns a ``Filter`` into an SQL condition, binding every value as a parameter.
///
/// `NOT` is pushed down to the comparisons, so that, as with NSPredicate, a negated comparison also matches
/// rows where the key is NULL (SQL's `NOT (k = x)` would be NULL there and drop them). Key paths through
/// to-one relationships read the related column with a scalar subquery (NULL when there is no related row,
/// as a nil key path is in NSPredicate); `ANY`/`ALL`/`NONE` become `EXISTS` over the to-many relationship.
struct FilterSQL {
    /// Where keys are read: an entity's table under a qualifier (its quoted name, or a subquery alias).
    struct Scope {
        let description: EntityDescription
        let qualifier: String
    }

    /// Resolved relationships, by `Entity.name`.
    let relationships: [String: ResolvedRelationship]
    private var aliases = 0
    private var depth = 0

    init(relationships: [String: ResolvedRelationship]) { self.relationships = relationships }

    mutating func condition(_ node: Filter.Node, in scope: Scope, into statement: inout Statement) throws -> String {
        try sql(node, negated: false, scope, &statement)
    }

    private mutating func sql(_ node: Filter.Node, negated: Bool, _ scope: Scope, _ statement: inout Statement) throws -> String {
        guard depth < Filter.maximumDepth else {
            throw StructPostgresError(
                .unsupportedPredicate, "the filter nests more than \(Filter.maximumDepth) levels deep", entity: scope.description.entity)
        }
        depth += 1
        defer { depth -= 1 }
        switch node {
        case .compare(let key, let op, let value, let options):
            let operand = try self.key(key, scope)
            return try FilterComparison(key: key, operand: operand).compare(op, value, options, negated: negated, &statement)
        case .between(let key, let lower, let upper):
            let operand = try self.key(key, scope)
            return try FilterComparison(key: key, operand: operand).between(lower, upper, negated: negated, &statement)
        case .among(let key, let values):
            let operand = try self.key(key, scope)
            return try FilterComparison(key: key, operand: operand).among(values, negated: negated, &statement)
        case .isNull(let key, let isNull):
            return "\(try self.key(key, scope).sql) IS \(isNull != negated ? "" : "NOT ")NULL"
        case .constant(let value):
            return value != negated ? "TRUE" : "FALSE"
        case .invalid(let error):
            throw error
        case .all(let nodes), .any(let nodes):
            var isAll = if case .all = node { true } else { false }
            if negated { isAll.toggle() }
            var parts: [String] = []
            for inner in nodes { parts.append(try sql(inner, negated: negated, scope, &statement)) }
            return "(" + parts.joined(separator: isAll ? " AND " : " OR ") + ")"
        case .not(var inner):
            var negated = !negated
            while case .not(let further) = inner { (inner, negated) = (further, !negated) }
            return try sql(inner, negated: negated, scope, &statement)
        case .quantified(let quantifier, let inner):
            return try quantified(quantifier, inner, negated: negated, scope, &statement)
        }
    }

    /// `EXISTS (SELECT 1 FROM <children> WHERE <link> AND <condition>)`, or its negation.
    private mutating func quantified(
        _ quantifier: Filter.Quantifier, _ inner: Filter.Node, negated: Bool, _ scope: Scope, _ statement: inout Statement
    ) throws -> String {
        guard let key = Self.key(of: inner) else {
            throw StructPostgresError(.invalidValue, "ANY, ALL and NONE apply to one comparison of a key path, as in ANY books.price > 10")
        }
        let segments = key.split(separator: ".", maxSplits: 1).map(String.init)
        let relationship = try self.relationship(segments[0], of: scope, key: key)
        guard relationship.info.kind.isToMany, segments.count == 2 else {
            throw unknownKey(
                key, scope, reason: "ANY, ALL and NONE need a key path through a to-many relationship, as in ANY books.price > 10")
        }
        let resolved = relationship.resolved
        let (from, alias) = children(of: resolved, scope)
        let condition = try sql(
            Self.replacingKey(of: inner, with: segments[1]), negated: false, Scope(description: resolved.target, qualifier: alias),
            &statement)
        var effective = quantifier
        if negated {
            switch quantifier {
            case .any: effective = .none
            case .none: effective = .any
            case .all: return "EXISTS (SELECT 1 \(from) AND (\(condition)) IS NOT TRUE)"
            }
        }
        switch effective {
        case .any: return "EXISTS (SELECT 1 \(from) AND \(condition))"
        case .none: return "NOT EXISTS (SELECT 1 \(from) AND \(condition))"
        case .all: return "NOT EXISTS (SELECT 1 \(from) AND (\(condition)) IS NOT TRUE)"
        }
    }

    /// `FROM <children> WHERE <linked to the row of scope>` for a to-many relationship, and the children's alias.
    private mutating func children(of resolved: ResolvedRelationship, _ scope: Scope) -> (from: String, alias: String) {
        let alias = nextAlias()
        if let join = resolved.join {
            return (
                "FROM \(join.quotedTable) \(alias)j JOIN \(join.quotedTargetTable) \(alias) "
                    + "ON \(alias).\(q(join.targetKey)) = \(alias)j.\(q(join.childColumn)) "
                    + "WHERE \(alias)j.\(q(join.parentColumn)) = \(scope.qualifier).\(q(resolved.sourceColumn))", alias
            )
        }
        return (
            "FROM \(resolved.target.schema.quotedTable) \(alias) "
                + "WHERE \(alias).\(q(resolved.targetColumn!)) = \(scope.qualifier).\(q(resolved.sourceColumn))", alias
        )
    }

    /// The SQL reading `key` in `scope`: a column, a scalar subquery through to-one relationships, or `@count`
    /// of a to-many relationship (a correlated `count(*)`) or of an array column (its length).
    /// Whether `key` names a column of `description`'s table directly: it neither goes through nor names a relationship.
    static func namesColumn(_ key: String, of description: EntityDescription) -> Bool {
        !key.utf8.contains(UInt8(ascii: ".")) && !description.relationships.contains { $0.name == key }
    }

    private mutating func key(_ key: String, _ scope: Scope) throws -> FilterComparison.Operand {
        // Most keys name a column: no relationship to look through.
        if Self.namesColumn(key, of: scope.description) {
            let column = try scope.description.column(for: key)
            return .init(
                sql: "\(scope.qualifier).\(q(column))", column: scope.description.schema.columns[column]!, description: scope.description)
        }
        let segments = key.split(separator: ".", maxSplits: 1).map(String.init)
        if segments.count == 2, segments[1] == "@count",
            let column = try? scope.description.column(for: segments[0]),
            let info = scope.description.schema.columns[column], info.isArray
        {
            return .init(
                sql: "coalesce(cardinality(\(scope.qualifier).\(q(column))), 0)", column: .count(named: key),
                description: scope.description)
        }
        if segments.count == 1 {
            if scope.description.schema.columns[key] == nil,
                let info = scope.description.relationships.first(where: { $0.name == key }), !info.kind.isToMany,
                let resolved = relationships["\(scope.description.entity).\(key)"]
            {
                // A to-one relationship compared as a whole (`author == nil`): its foreign-key column.
                return .init(
                    sql: "\(scope.qualifier).\(q(resolved.sourceColumn))",
                    column: scope.description.schema.columns[resolved.sourceColumn]!, description: scope.description)
            }
            let column = try scope.description.column(for: key)
            return .init(
                sql: "\(scope.qualifier).\(q(column))", column: scope.description.schema.columns[column]!, description: scope.description)
        }
        let relationship = try self.relationship(segments[0], of: scope, key: key)
        if relationship.info.kind.isToMany {
            guard segments[1] == "@count" else {
                throw unknownKey(
                    key, scope,
                    reason:
                        "'\(segments[0])' is a to-many relationship; use ANY, ALL or NONE, as in ANY \(key) == %@, or count it with \(segments[0]).@count"
                )
            }
            let (from, _) = children(of: relationship.resolved, scope)
            return .init(sql: "(SELECT count(*) \(from))", column: .count(named: key), description: scope.description)
        }
        let resolved = relationship.resolved
        let alias = nextAlias()
        let inner = try self.key(segments[1], Scope(description: resolved.target, qualifier: alias))
        return .init(
            sql: "(SELECT \(inner.sql) FROM \(resolved.target.schema.quotedTable) \(alias) "
                + "WHERE \(alias).\(q(resolved.targetColumn!)) = \(scope.qualifier).\(q(resolved.sourceColumn)))",
            column: inner.column, description: inner.description)
    }

    private func relationship(_ name: String, of scope: Scope, key: String) throws -> (
        info: RelationshipInfo, resolved: ResolvedRelationship
    ) {
        let description = scope.description
        guard let info = description.relationships.first(where: { $0.name == name }),
            let resolved = relationships["\(description.entity).\(name)"]
        else {
            let known =
                description.relationships.isEmpty
                ? "it has no relationships"
                : "its relationships are \(description.relationships.map(\.name).joined(separator: ", "))"
            throw unknownKey(key, scope, reason: "'\(name)' is not a relationship of \(description.entity); \(known)")
        }
        return (info, resolved)
    }

    private func unknownKey(_ key: String, _ scope: Scope, reason: String) -> StructPostgresError {
        StructPostgresError(
            .undefinedColumn, "unknown key path '\(key)': \(reason)",
            entity: scope.description.entity, table: scope.description.schema.table, property: key)
    }

    private mutating func nextAlias() -> String {
        aliases += 1
        return "r\(aliases)"
    }

    private func q(_ name: String) -> String { SQLIdentifier.quote(name) }

    static func key(of node: Filter.Node) -> String? {
        switch node {
        case .compare(let key, _, _, _), .between(let key, _, _), .among(let key, _), .isNull(let key, _): key
        case .not(let inner): key(of: inner)
        default: nil
        }
    }

    static func replacingKey(of node: Filter.Node, with key: String) -> Filter.Node {
        switch node {
        case .compare(_, let op, let value, let options): .compare(key, op, value, options)
        case .between(_, let lower, let upper): .between(key, lower, upper)
        case .among(_, let values): .among(key, values)
        case .isNull(_, let isNull): .isNull(key, isNull)
        case .not(let inner): .not(replacingKey(of: inner, with: key))
        default: node
        }
    }
}
