import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Parses an NSPredicate format string into a ``Filter``: comparisons, string operators, `IN`, `BETWEEN`,
/// `MATCHES`, `AND OR NOT`, `ANY ALL NONE`, `@count`, `TRUEPREDICATE`/`FALSEPREDICATE`, literals and `%@ %K %d %i %f %lld` substitutions.
/// Values become bound parameters; nothing of the string reaches the SQL but validated key names.
struct PredicateParser {
    typealias Token = PredicateLexer.Token
    typealias Value = any Encodable & Sendable

    private enum Operand {
        case key(String)
        case value(Value)
        case list([Value])
    }

    let format: String
    private let tokens: [Token]
    private var index = 0
    private let arguments: [Value?]
    private var used = 0
    /// How many parentheses are open; ``Filter/maximumDepth`` at most, so that a deep predicate is refused by name
    /// instead of overflowing the stack.
    private var depth = 0

    init(format: String, arguments: [Value?]) throws {
        self.format = format
        self.tokens = try PredicateLexer.tokens(format)
        self.arguments = arguments
    }

    mutating func parse() throws -> Filter.Node {
        let node = try parseOr()
        guard current.kind == .end else { throw error("expected AND, OR or the end of the predicate, found \(describe(current))") }
        guard used == arguments.count else {
            throw error(
                "\(arguments.count) argument\(arguments.count == 1 ? "" : "s") given for \(used) placeholder\(used == 1 ? "" : "s")",
                at: tokens.last!)
        }
        return node
    }

    // MARK: Grammar

    private mutating func parseOr() throws -> Filter.Node {
        var nodes = [try parseAnd()]
        while isKeyword("OR") || isSymbol("||") {
            advance()
            nodes.append(try parseAnd())
        }
        return nodes.count == 1 ? nodes[0] : .any(nodes)
    }

    private mutating func parseAnd() throws -> Filter.Node {
        var nodes = [try parseNot()]
        while isKeyword("AND") || isSymbol("&&") {
            advance()
            nodes.append(try parseNot())
        }
        return nodes.count == 1 ? nodes[0] : .all(nodes)
    }

    private mutating func parseNot() throws -> Filter.Node {
        var negations = 0
        while isKeyword("NOT") || isSymbol("!") {
            advance()
            negations += 1
        }
        let node = try parsePrimary()
        return negations % 2 == 1 ? .not(node) : node
    }

    private mutating func parsePrimary() throws -> Filter.Node {
        if isSymbol("(") {
            guard depth < Filter.maximumDepth else {
                throw error("parentheses nest more than \(Filter.maximumDepth) levels deep")
            }
            advance()
            depth += 1
            defer { depth -= 1 }
            let node = try parseOr()
            guard isSymbol(")") else { throw error("expected ')' to close the '(' , found \(describe(current))") }
            advance()
            return node
        }
        if isKeyword("TRUEPREDICATE") { advance(); return .constant(true) }
        if isKeyword("FALSEPREDICATE") { advance(); return .constant(false) }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> Filter.Node {
        var quantifier: Filter.Quantifier?
        for (word, value) in [("ANY", Filter.Quantifier.any), ("SOME", .any), ("ALL", .all), ("NONE", .none)] where isKeyword(word) {
            quantifier = value
            advance()
            break
        }
        let leftToken = current
        let left = try parseOperand()
        let operatorToken = current
        var (comparison, negatedIn) = try parseOperator()
        var options = Filter.Options()
        if case .modifier(let text) = current.kind {
            options.caseInsensitive = text.contains("c")
            options.diacriticInsensitive = text.contains("d")
            advance()
        }
        let rightToken = current
        let right = try parseOperand(allowList: comparison == .in || comparison == .between)

        var key: String
        var value: Operand
        switch (left, right) {
        case (.key(let k), .value), (.key(let k), .list):
            key = k
            value = right
        case (.value, .key(let k)):
            guard let mirrored = comparison.mirrored else {
                throw error("put the key on the left of \(describe(operatorToken))", at: leftToken)
            }
            key = k
            value = left
            comparison = mirrored
        case (.key, .key):
            throw error("comparing two keys is not supported; compare a key with a value", at: rightToken)
        default:
            throw error("expected a key (a property name) on one side of \(describe(operatorToken))", at: leftToken)
        }

        if comparison == .in || comparison == .between, options.caseInsensitive || options.diacriticInsensitive {
            let word = comparison == .in ? "IN" : "BETWEEN"
            throw error(
                "\(word) does not take [c] or [d]; compare each value instead, as in key ==[c] 'a' OR key ==[c] 'b'", at: operatorToken)
        }
        let node: Filter.Node
        switch comparison {
        case .in:
            node = .among(key, try values(of: value, at: rightToken, for: "IN"))
        case .between:
            let bounds = try values(of: value, at: rightToken, for: "BETWEEN")
            guard bounds.count == 2 else {
                throw error("BETWEEN needs two values, as in {1, 5}; found \(bounds.count)", at: rightToken)
            }
            node = .between(key, bounds[0], bounds[1])
        case .compare(let op):
            guard case .value(let single) = value else {
                throw error("\(describe(operatorToken)) compares with one value, not a list", at: rightToken)
            }
            if op.isStringOperator, !(single is String) {
                throw error("\(describe(operatorToken)) needs a string", at: rightToken)
            }
            node = .compare(key, op, single, options)
        }
        negatedIn = negatedIn && comparison == .in
        let result: Filter.Node = negatedIn ? .not(node) : node
        return quantifier.map { .quantified($0, result) } ?? result
    }

    private enum Comparison: Equatable {
        case compare(Filter.Operator)
        case `in`
        case between

        var mirrored: Comparison? {
            guard case .compare(let op) = self else { return nil }
            switch op {
            case .equal, .notEqual: return self
            case .less: return .compare(.greater)
            case .lessOrEqual: return .compare(.greaterOrEqual)
            case .greater: return .compare(.less)
            case .greaterOrEqual: return .compare(.lessOrEqual)
            default: return nil
            }
        }
    }

    private mutating func parseOperator() throws -> (Comparison, negated: Bool) {
        let token = current
        let symbols: [String: Filter.Operator] = [
            "==": .equal, "=": .equal, "!=": .notEqual, "<>": .notEqual, "<": .less, "<=": .lessOrEqual, "=<": .lessOrEqual,
            ">": .greater, ">=": .greaterOrEqual, "=>": .greaterOrEqual,
        ]
        if case .symbol(let symbol) = token.kind, let op = symbols[symbol] {
            advance()
            return (.compare(op), false)
        }
        if isKeyword("NOT"), case .identifier(let next) = tokens[index + 1].kind, next.uppercased() == "IN" {
            advance(); advance()
            return (.in, true)
        }
        guard case .identifier(let word) = token.kind else {
            throw error(
                "expected a comparison (==, !=, <, <=, >, >=, IN, BETWEEN, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES), found \(describe(token))"
            )
        }
        let words: [String: Comparison] = [
            "IN": .in, "BETWEEN": .between, "BEGINSWITH": .compare(.beginsWith), "ENDSWITH": .compare(.endsWith),
            "CONTAINS": .compare(.contains), "LIKE": .compare(.like), "MATCHES": .compare(.matches),
        ]
        guard let comparison = words[word.uppercased()] else {
            throw error(
                "expected a comparison (==, !=, <, <=, >, >=, IN, BETWEEN, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES), found \(describe(token))"
            )
        }
        advance()
        return (comparison, false)
    }

    private mutating func parseOperand(allowList: Bool = false) throws -> Operand {
        let token = current
        switch token.kind {
        case .identifier(let word):
            advance()
            switch word.uppercased() {
            case "NIL", "NULL": return .value(String?.none)
            case "TRUE", "YES": return .value(true)
            case "FALSE", "NO": return .value(false)
            case "AND", "OR", "NOT", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "ANY", "ALL", "NONE", "SOME",
                "TRUEPREDICATE", "FALSEPREDICATE":
                throw error("expected a key or a value, found the keyword \(word.uppercased())", at: token)
            default: return .key(word)
            }
        case .escapedKey(let name):
            advance()
            return .key(name)
        case .string(let text):
            advance()
            return .value(text)
        case .number(let text):
            advance()
            return .value(Self.number(text))
        case .symbol("-"):
            advance()
            guard case .number(let text) = current.kind else { throw error("expected a number after '-'", at: token) }
            advance()
            return .value(Self.number("-" + text))
        case .placeholder(let placeholder):
            advance()
            let argument = try nextArgument(for: placeholder, at: token)
            if placeholder == "%K" {
                guard let name = argument as? String else {
                    throw error("the argument for %K must be a key name (a String)", at: token)
                }
                return .key(name)
            }
            return .value(argument ?? String?.none)
        case .symbol("{"):
            guard allowList else { throw error("a list { ... } goes after IN or BETWEEN", at: token) }
            advance()
            var items: [Value] = []
            while !isSymbol("}") {
                guard case .value(let item) = try parseOperand() else {
                    throw error("a list holds values, not keys", at: tokens[index - 1])
                }
                items.append(item)
                if isSymbol(",") {
                    advance()
                } else if !isSymbol("}") {
                    throw error("expected ',' or '}' in the list, found \(describe(current))")
                }
            }
            advance()
            return .list(items)
        case .end:
            throw error("the predicate ends where a key or a value was expected")
        default:
            throw error("expected a key or a value, found \(describe(token))")
        }
    }

    private mutating func nextArgument(for placeholder: String, at token: Token) throws -> Value? {
        guard used < arguments.count else {
            throw error("placeholder \(placeholder) has no argument: \(arguments.count) given", at: token)
        }
        let argument = arguments[used]
        used += 1
        switch placeholder {
        case "%@", "%K":
            return argument
        case "%f", "%g":
            guard argument == nil || argument is any BinaryFloatingPoint || argument is Decimal || argument is any BinaryInteger else {
                throw error("\(placeholder) needs a number, argument \(used) is \(type(of: argument!))", at: token)
            }
            return argument
        default:
            guard argument == nil || argument is any BinaryInteger else {
                throw error("\(placeholder) needs an integer, argument \(used) is \(type(of: argument!))", at: token)
            }
            return argument
        }
    }

    private func values(of operand: Operand, at token: Token, for word: String) throws -> [Value] {
        switch operand {
        case .list(let items): return items
        case .value(let value):
            if !(value is String), let collection = value as? any Collection, let items = Array(collection) as? [any Encodable] {
                return try items.map { EncodedValue(value: try RowEncoder.columnValue(of: $0, property: word)) }
            }
            throw error("\(word) needs a list, as in {1, 2} or an array argument", at: token)
        case .key:
            throw error("\(word) needs a list of values, not a key", at: token)
        }
    }

    private static func number(_ text: String) -> Value {
        if let int = Int64(text) { return int }
        return Double(text)!
    }

    // MARK: Tokens

    private var current: Token { tokens[index] }
    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func isKeyword(_ word: String) -> Bool {
        if case .identifier(let text) = current.kind { return text.uppercased() == word }
        return false
    }

    private func isSymbol(_ symbol: String) -> Bool { current.kind == .symbol(symbol) }

    private func describe(_ token: Token) -> String {
        switch token.kind {
        case .identifier(let text): "'\(text)'"
        case .escapedKey(let text): "'#\(text)'"
        case .string(let text): "the string '\(text)'"
        case .number(let text): "the number \(text)"
        case .placeholder(let text): text
        case .symbol(let text): "'\(text)'"
        case .modifier(let text): "[\(text)]"
        case .end: "the end"
        }
    }

    private func error(_ message: String, at token: Token? = nil) -> StructPostgresError {
        PredicateSyntax.error(message, format: format, at: (token ?? current).position)
    }
}
