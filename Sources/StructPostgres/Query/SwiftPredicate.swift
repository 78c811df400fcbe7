import Foundation
import StructPostgresCore
import StructPostgresDriver

extension Filter {
    /// A filter from Swift's `#Predicate`, on the model or on its entity: the expression tree is compiled to the
    /// same SQL as a format string, every value bound.
    ///
    /// ```swift
    /// let limit = 10.0
    /// let cheap = try await service.fetch(BookModel.self, where: .predicate(#Predicate<BookModel> {
    ///     $0.price! < limit && ($0.title?.starts(with: "Sw") ?? false)
    /// }))
    /// ```
    ///
    /// Understood: `==`, `!=`, `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`; comparisons with `nil`; optional chains with
    /// `?? false` (or `?? true`); `String`'s `starts(with:)`, `contains(_:)`, `localizedStandardContains(_:)`
    /// (case-insensitive, as `CONTAINS[c]`) and `caseInsensitiveCompare(_:) == .orderedSame`; `array.contains(property)`
    /// (`= ANY`); key paths through to-one relationships (`$0.author?.name`); `contains(where:)` and `allSatisfy`
    /// over to-many ones (`ANY`, `ALL`); captured values of any type a filter takes (dates, UUIDs, decimals, enums
    /// with raw values). Anything else (arithmetic, a method it does not know, two properties compared, a computed
    /// property or a ``Related`` slot, which no column holds) makes the filter fail when used with
    /// `unsupportedPredicate`, with an error that names the part, rather than filtering in the client.
    ///
    /// The rows are those `predicate.evaluate` keeps: strings compare composed (NFC) and at whole Characters, NaN
    /// equals and orders with nothing; what PostgreSQL cannot decide so (`$0.title.count`, a `contains` operand
    /// that begins with a combining mark) is refused by name.
    public init<Root>(_ predicate: Predicate<Root>) {
        do {
            var compiler = PredicateCompiler()
            compiler.bindings[predicate.variable.key] = .root
            node = try compiler.condition(predicate.expression)
        } catch {
            node = .invalid(error)
        }
    }
}

/// What a part of a predicate is once compiled.
enum PredicateTerm {
    /// The predicate's input.
    case root
    /// A property, or a path through relationships (`author.name`).
    case key(String)
    /// A value of the caller's: bound, never spliced.
    case value(any Encodable & Sendable)
    case null
    /// A collection of values (`[a, b].contains($0.x)`).
    case values([any Encodable & Sendable])
    /// A condition.
    case condition(Filter.Node)
    /// `caseInsensitiveCompare`: compared with `.orderedSame`, a case-insensitive equality.
    case caseInsensitiveCompare(String, any Encodable & Sendable)
}

/// Compiles `PredicateExpressions` trees, one node type at a time (see ``CompilablePredicateExpression``).
struct PredicateCompiler {
    var bindings: [PredicateExpressions.VariableID: PredicateTerm] = [:]

    mutating func term(_ expression: Any) throws(StructPostgresError) -> PredicateTerm {
        guard let compilable = expression as? any CompilablePredicateExpression else {
            throw Self.unsupported(expression)
        }
        return try compilable.compile(&self)
    }

    mutating func condition(_ expression: Any) throws(StructPostgresError) -> Filter.Node {
        switch try term(expression) {
        case .condition(let node): return node
        case .key(let key): return .compare(key, .equal, true, Filter.Options())
        case .value(let value as Bool): return .constant(value)
        default: throw Self.unsupported(expression, why: "it is not a condition")
        }
    }

    mutating func key(_ expression: Any) throws(StructPostgresError) -> String {
        guard case .key(let key) = try term(expression) else { throw Self.unsupported(expression, why: "a property is expected here") }
        return key
    }

    /// `key op value`, whichever side the property is on.
    mutating func comparison(_ lhs: Any, _ op: Filter.Operator, _ rhs: Any, whole: Any) throws(StructPostgresError) -> Filter.Node {
        switch (try term(lhs), try term(rhs)) {
        case (.key(let key), .value(let value)): return .compare(key, op, value, Filter.Options())
        case (.value(let value), .key(let key)): return .compare(key, op.swapped, value, Filter.Options())
        case (.key(let key), .null), (.null, .key(let key)):
            switch op {
            case .equal: return .isNull(key, true)
            case .notEqual: return .isNull(key, false)
            default: throw Self.unsupported(whole, why: "only == and != compare with nil")
            }
        case (.caseInsensitiveCompare(let key, let text), .value(let order as ComparisonResult)),
            (.value(let order as ComparisonResult), .caseInsensitiveCompare(let key, let text)):
            let ordered: Filter.Operator =
                switch order {
                case .orderedSame: .equal
                case .orderedAscending: .less
                case .orderedDescending: .greater
                }
            let node = Filter.Node.compare(key, ordered, text, Filter.Options(caseInsensitive: true))
            switch op {
            case .equal: return node
            case .notEqual: return .not(node)
            default: throw Self.unsupported(whole, why: "compare caseInsensitiveCompare's result with == or !=")
            }
        case (.key, .key):
            throw Self.unsupported(whole, why: "comparing two properties is not supported; compare a property with a value")
        default:
            throw Self.unsupported(whole, why: "a comparison needs a property on one side and a value on the other")
        }
    }

    /// Binds `variable` to `term` while compiling `body`.
    mutating func with<T>(
        _ variable: PredicateExpressions.VariableID, as term: PredicateTerm, _ body: (inout Self) throws(StructPostgresError) -> T
    ) throws(StructPostgresError) -> T {
        let previous = bindings[variable]
        bindings[variable] = term
        defer { bindings[variable] = previous }
        return try body(&self)
    }

    static func unsupported(_ expression: Any, why: String? = nil) -> StructPostgresError {
        StructPostgresError(
            .unsupportedPredicate,
            "#Predicate: \(describe(type(of: expression))) cannot be compiled to SQL\(why.map { ": \($0)" } ?? ""); nothing is filtered in the client, so rewrite the expression or use a format string"
        )
    }

    /// `Arithmetic` for `PredicateExpressions.Arithmetic<PredicateExpressions.KeyPath<...>, ...>`.
    static func describe(_ type: Any.Type) -> String {
        let name = String(describing: type)
        return String(name.prefix { $0 != "<" }).replacingOccurrences(of: "PredicateExpressions.", with: "")
    }
}

extension Filter.Operator {
    /// The operator with its sides swapped: `5 < x` is `x > 5`.
    var swapped: Self {
        switch self {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: self
        }
    }
}
