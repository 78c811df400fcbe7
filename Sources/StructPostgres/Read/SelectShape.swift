import StructPostgresCore
import StructPostgresDriver

/// The shape of a fetch whose `SELECT` text depends on nothing but its shape (see ``SelectTemplates``), with the
/// values its filter binds, encoded. Fetches with a string operator, a list, a range, a key through a relationship
/// or an `ANY`/`ALL` have none: their texts (or the values they bind) depend on the values, and are built each time.
/// Nor do fetches with an offset: each page's text is another (the offset is written in it), and paging through a
/// table would fill the templates with texts used once.
struct SelectShape {
    private(set) var shape: SelectTemplates.Shape
    /// Each comparison's encoded value, in the order the text binds them, with what checks it.
    private var comparisons: [(FilterComparison, ColumnValue)] = []
    /// The filter is one equality on one column, without options: a point read (see ``pointValue``).
    private var isEquality = false

    /// The shape of `request`, or `nil` when it has none; never throws (a filter that fails fails when built).
    init?(_ request: FetchRequest, entity: ObjectIdentifier, description: EntityDescription) {
        guard request.offset == nil else { return nil }
        shape = SelectTemplates.Shape(entity: entity)
        // Room for a point read's shape at once (a comparison, a sort key and the limit): no array grows.
        shape.names.reserveCapacity(4)
        shape.codes.reserveCapacity(12)
        if let filter = request.filter {
            guard add(filter.node, description, depth: 0) else { return nil }
            if case .compare(_, .equal, _, let options) = filter.node, !options.caseInsensitive, !options.diacriticInsensitive {
                isEquality = true
            }
        }
        for key in request.sort {
            guard key.isValid else { return nil }
            shape.names.append(key.key)
            shape.codes.append(7)
            shape.codes.append(key.ascending ? 1 : 0)
            shape.codes.append(key.nulls == .default ? 0 : key.nulls == .first ? 1 : 2)
        }
        shape.codes.append(8)
        shape.codes.append(request.limit == nil ? 0 : 1)
        shape.codes.append(request.limit ?? 0)
    }

    /// The value a point read binds: a filter of one equality on one column, without options, of a value that is
    /// neither null, NaN nor an array, and no offset. Such fetches of one shape can be answered together
    /// (``DatabaseSession/fetchPoints(_:_:keys:loading:)``); `nil` for any other fetch, or a value the column refuses.
    var pointValue: ColumnValue? {
        guard isEquality, comparisons.count == 1, let (comparison, encoded) = comparisons.first,
            let bound = try? comparison.boundValue(encoded), !bound.isArray
        else { return nil }
        return bound
    }

    /// This point read's shape with `value` in place of its key: `nil` unless `value` encodes as a point read's key
    /// of the same wire type (the shape of any other value differs).
    func withPointValue(_ value: any Encodable & Sendable) -> SelectShape? {
        guard isEquality, comparisons.count == 1, let comparison = comparisons.first?.0,
            let encoded = try? comparison.encode(value), encoded != .null, !encoded.isNaN, !encoded.isArray,
            encoded.wireType == shape.wires.first
        else { return nil }
        var shape = self
        shape.comparisons[0].1 = encoded
        return shape
    }

    /// The statement of this fetch with `template`'s text: the values bound, each checked as when the text was built.
    /// `nil` if the values bound have other types than the template's (the text is then built).
    func statement(_ template: SelectTemplates.Template) throws -> Statement? {
        var statement = Statement(sql: template.sql)
        for (comparison, encoded) in comparisons {
            if let bound = try comparison.boundValue(encoded) { statement.append(bound) }
        }
        guard statement.types == template.preparedKey.types else { return nil }
        statement.preparedKey = template.preparedKey
        return statement
    }

    private mutating func add(_ node: Filter.Node, _ description: EntityDescription, depth: Int) -> Bool {
        guard depth < Filter.maximumDepth else { return false }
        switch node {
        case .compare(let key, let op, let value, let options):
            guard !op.isStringOperator, !options.diacriticInsensitive, let column = Self.column(key, description) else { return false }
            let comparison = FilterComparison(key: key, operand: .init(sql: "", column: column, description: description))
            // A value that cannot be encoded: the text is built, which reports it where it would.
            guard let encoded = try? comparison.encode(value), !encoded.isArray else { return false }
            shape.names.append(key)
            shape.names.append(op.rawValue)
            shape.codes.append(1)
            shape.codes.append(options.caseInsensitive ? 1 : 0)
            shape.codes.append(encoded == .null ? 0 : encoded.isNaN ? 1 : 2)
            if let wire = encoded.wireType { shape.wires.append(wire) }
            comparisons.append((comparison, encoded))
        case .isNull(let key, let isNull):
            guard Self.column(key, description) != nil else { return false }
            shape.names.append(key)
            shape.codes += [2, isNull ? 1 : 0]
        case .constant(let value):
            shape.codes += [3, value ? 1 : 0]
        case .all(let nodes), .any(let nodes):
            shape.codes += [node.isAll ? 4 : 5, nodes.count]
            for inner in nodes {
                guard add(inner, description, depth: depth + 1) else { return false }
            }
        case .not(let inner):
            shape.codes.append(6)
            return add(inner, description, depth: depth + 1)
        case .between, .among, .quantified, .invalid:
            return false
        }
        return true
    }

    /// The column a key names directly (as ``FilterSQL`` resolves it: not through nor naming a relationship).
    private static func column(_ key: String, _ description: EntityDescription) -> TableSchema.Column? {
        guard FilterSQL.namesColumn(key, of: description), let name = try? description.column(for: key) else { return nil }
        return description.schema.columns[name]
    }
}

extension Filter.Node {
    fileprivate var isAll: Bool { if case .all = self { true } else { false } }
}
