import Foundation
import StructPostgresCore
import StructPostgresDriver

/// A `PredicateExpressions` node the compiler understands. A node type without this conformance is refused by name.
protocol CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm
}

extension PredicateExpressions.Variable: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        guard let bound = compiler.bindings[key] else { throw PredicateCompiler.unsupported(self, why: "a variable outside its closure") }
        return bound
    }
}

extension PredicateExpressions.KeyPath: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        let base = try compiler.term(root)
        let name: String
        do {
            name = try KeyPathNames.name(of: keyPath)
        } catch {
            // A property of a stored value (`$0.uuid.uuidString`), not of a related model: the value has no columns.
            let value = Root.Output.self
            if case .key(let path) = base, !(value is any EntityProtocol.Type || value is any EntityConvertible.Type) {
                if (keyPath as AnyKeyPath) == (\String.count as AnyKeyPath) {
                    throw PredicateCompiler.unsupported(
                        self,
                        why:
                            "'\(path).count' counts Characters (grapheme clusters), which PostgreSQL cannot count: its length() counts code points, and the two differ for 'e\\u{301}' or '👍🏽'"
                    )
                }
                throw PredicateCompiler.unsupported(
                    self,
                    why:
                        "'\(path)' holds a \(value), and a property computed from that value (or one of its fields) is not a column; compare '\(path)' itself"
                )
            }
            throw PredicateCompiler.unsupported(self, why: Self.notStored(KeyPathNames.whatIsRead(by: keyPath)))
        }
        switch base {
        case .root: return .key(name)
        case .key(let path): return .key(path + "." + name)
        default: throw PredicateCompiler.unsupported(self, why: "a key path of a value, not of the input")
        }
    }

    /// Why a key path of the model that is not one of its stored properties has no column, and what to write instead.
    private static func notStored(_ read: KeyPathNames.NotStored) -> String {
        let model = Root.Output.self
        let stored = "compare stored properties of \(model)"
        switch read {
        case .relatedSlot(let names):
            let slot = names.count == 1 ? "\(model).\(names[0])" : "one of \(names.map { "\(model).\($0)" }.joined(separator: ", "))"
            let example = names[0]
            return
                "the key path reads \(slot), a @Related relationship slot (of type \(Output.self)) loaded with the rows, not a column; \(stored) (such as the relationship's key), or write a format string through the relationship, as in \"\(example).<property> == %@\""
        case .pathIntoAField(let path):
            return
                "the key path \(path) reads into the fields of a stored property of \(model), which have no column of their own; \(stored)"
        case .computed:
            return
                "the key path reads a computed property of \(model) (of type \(Output.self)), or a property wrapper's wrapped value, which Swift computes and no column holds; \(stored)"
        }
    }
}

extension PredicateExpressions.Value: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        if let optional = value as? any OptionalValue, optional.isNil { return .null }
        if let text = value as? String { return .value(text) }
        if let flag = value as? Bool { return .value(flag) }
        if let values = value as? any Collection, !(value is Data) {
            var bound: [any Encodable & Sendable] = []
            for element in values {
                guard let element = element as? any Encodable else {
                    throw PredicateCompiler.unsupported(self, why: "\(type(of: element)) cannot be bound")
                }
                bound.append(Self.sendable(element))
            }
            return .values(bound)
        }
        guard let bound = value as? any Encodable else {
            throw PredicateCompiler.unsupported(self, why: "a value of type \(Output.self) cannot be bound")
        }
        return .value(Self.sendable(bound))
    }

    /// A predicate's values are `Sendable` (a `Predicate` is), which a dynamic cast cannot state.
    private static func sendable(_ value: any Encodable) -> any Encodable & Sendable {
        PredicateValue(value: value)
    }
}

extension PredicateExpressions.NilLiteral: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm { .null }
}

/// `Optional` seen through `Any`.
private protocol OptionalValue {
    var isNil: Bool { get }
}

extension Optional: OptionalValue {
    var isNil: Bool { self == nil }
}

extension PredicateExpressions.Conjunction: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        .condition(.all([try compiler.condition(lhs), try compiler.condition(rhs)]))
    }
}

extension PredicateExpressions.Disjunction: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        .condition(.any([try compiler.condition(lhs), try compiler.condition(rhs)]))
    }
}

extension PredicateExpressions.Negation: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        .condition(.not(try compiler.condition(wrapped)))
    }
}

extension PredicateExpressions.Equal: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        .condition(try compiler.comparison(lhs, .equal, rhs, whole: self))
    }
}

extension PredicateExpressions.NotEqual: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        .condition(try compiler.comparison(lhs, .notEqual, rhs, whole: self))
    }
}

extension PredicateExpressions.Comparison: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        let operation: Filter.Operator =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        return .condition(try compiler.comparison(lhs, operation, rhs, whole: self))
    }
}

/// `$0.title?.starts(with: "Sw") ?? false`: a NULL makes a comparison unknown, which a filter treats as false;
/// `?? true` adds the rows where the optional is NULL.
extension PredicateExpressions.NilCoalesce: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        guard case .value(let fallback as Bool) = try compiler.term(rhs) else {
            throw PredicateCompiler.unsupported(self, why: "only a condition ?? true or ?? false is supported")
        }
        let condition = try compiler.condition(lhs)
        // A to-many relationship is an empty set, never NULL: `?? true` adds nothing to `contains(where:)`/`allSatisfy`.
        if !fallback { return .condition(condition) }
        if case .quantified = condition { return .condition(condition) }
        guard let optional = (lhs as? any OptionalChain)?.wrappedExpression, case .key(let key) = try compiler.term(optional) else {
            throw PredicateCompiler.unsupported(self, why: "?? true needs an optional property on the left")
        }
        return .condition(.any([condition, .isNull(key, true)]))
    }
}

/// An optional chain (`$0.author?.name`), whose optional part `?? true` tests for NULL.
private protocol OptionalChain {
    var wrappedExpression: Any { get }
}

extension PredicateExpressions.OptionalFlatMap: OptionalChain {
    var wrappedExpression: Any { wrapped }
}

extension PredicateExpressions.OptionalFlatMap: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        let base = try compiler.term(wrapped)
        guard case .key = base else { throw PredicateCompiler.unsupported(self, why: "an optional chain on a value, not a property") }
        return try compiler.with(variable.key, as: base) { compiler throws(StructPostgresError) in try compiler.term(transform) }
    }
}

extension PredicateExpressions.ForcedUnwrap: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        try compiler.term(inner)
    }
}

extension PredicateExpressions.SequenceStartsWith: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        guard case .value(let text as String) = try compiler.term(prefix) else {
            throw PredicateCompiler.unsupported(self, why: "starts(with:) takes a string value")
        }
        return .condition(.compare(try compiler.key(base), .beginsWith, text, Filter.Options()))
    }
}

extension PredicateExpressions.CollectionContainsCollection: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        guard case .value(let text as String) = try compiler.term(other) else {
            throw PredicateCompiler.unsupported(self, why: "contains(_:) takes a string value")
        }
        return .condition(.compare(try compiler.key(base), .contains, text, Filter.Options()))
    }
}

#if canImport(Darwin)
// Apple's Foundation only: swift-foundation on Linux has neither expression (so #Predicate cannot write them there).
extension PredicateExpressions.StringLocalizedStandardContains: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        guard case .value(let text as String) = try compiler.term(other) else {
            throw PredicateCompiler.unsupported(self, why: "localizedStandardContains(_:) takes a string value")
        }
        return .condition(.compare(try compiler.key(root), .contains, text, Filter.Options(caseInsensitive: true)))
    }
}

extension PredicateExpressions.StringCaseInsensitiveCompare: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        guard case .value(let text as String) = try compiler.term(other) else {
            throw PredicateCompiler.unsupported(self, why: "caseInsensitiveCompare(_:) takes a string value")
        }
        return .caseInsensitiveCompare(try compiler.key(root), text)
    }
}
#endif

/// `[a, b].contains($0.x)` as `x = ANY($1)`.
extension PredicateExpressions.SequenceContains: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        switch (try compiler.term(sequence), try compiler.term(element)) {
        case (.values(let values), .key(let key)): return .condition(.among(key, values))
        default: throw PredicateCompiler.unsupported(self, why: "contains(_:) of a collection value and a property is supported")
        }
    }
}

/// `$0.reviews.contains { ... }` over a to-many relationship: `ANY`.
extension PredicateExpressions.SequenceContainsWhere: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        let relationship = try compiler.term(sequence)
        guard case .key = relationship else {
            throw PredicateCompiler.unsupported(self, why: "contains(where:) of a to-many relationship is supported")
        }
        return .condition(
            .quantified(
                .any,
                try compiler.with(variable.key, as: relationship) { compiler throws(StructPostgresError) in try compiler.condition(test) }))
    }
}

/// `$0.reviews.allSatisfy { ... }` over a to-many relationship: `ALL`.
extension PredicateExpressions.SequenceAllSatisfy: CompilablePredicateExpression {
    func compile(_ compiler: inout PredicateCompiler) throws(StructPostgresError) -> PredicateTerm {
        let relationship = try compiler.term(sequence)
        guard case .key = relationship else {
            throw PredicateCompiler.unsupported(self, why: "allSatisfy of a to-many relationship is supported")
        }
        return .condition(
            .quantified(
                .all,
                try compiler.with(variable.key, as: relationship) { compiler throws(StructPostgresError) in try compiler.condition(test) }))
    }
}
