import Foundation
import StructPostgresCore
import StructPostgresDriver

/// One comparison of a key's SQL with bound values, with NSPredicate's NULL semantics under negation.
struct FilterComparison {
    struct Operand {
        let sql: String
        let column: TableSchema.Column
        let description: EntityDescription
    }

    let key: String
    let operand: Operand

    func compare(
        _ op: Filter.Operator, _ value: any Encodable & Sendable, _ options: Filter.Options, negated: Bool,
        _ statement: inout Statement
    ) throws -> String {
        guard !options.diacriticInsensitive else {
            throw invalid("diacritic-insensitive comparison ([d]) is not supported: PostgreSQL needs the unaccent extension for it")
        }
        let encoded = try encode(value)
        let subject = options.caseInsensitive ? "lower(\(operand.sql))" : operand.sql
        if encoded == .null {
            switch op {
            case .equal: return negated ? "\(operand.sql) IS NOT NULL" : "\(operand.sql) IS NULL"
            case .notEqual: return negated ? "\(operand.sql) IS NULL" : "\(operand.sql) IS NOT NULL"
            default: return negated ? "TRUE" : "FALSE"  // NSPredicate: no order with nil
            }
        }
        if op.isStringOperator {
            guard operand.column.isStringLike, case .text(let text) = encoded else {
                throw invalid(
                    "\(op.rawValue) needs a text column and a string; column '\(operand.column.name)' is \(operand.column.typeName)")
            }
            var condition: String
            if op == .matches {
                // Anchored as a whole: a pattern that closes more groups than it opens would escape the anchors.
                guard Self.parenthesesBalance(text) else {
                    throw invalid("the MATCHES pattern's parentheses do not balance (escape a literal one as \\( or \\))")
                }
                let parameter = statement.bind(.text("^(?:" + text + ")$"))
                condition = "\(operand.sql) \(options.caseInsensitive ? "~*" : "~") \(parameter)"
            } else {
                let parameter = statement.bind(.text(Self.pattern(for: op, text)))
                condition = "\(operand.sql) \(options.caseInsensitive ? "ILIKE" : "LIKE") \(parameter)"
                if op != .like, let boundary = try characterBoundary(op, text) {
                    // LIKE finds the code points (and keeps an index usable); the expression holds them to whole Characters.
                    let expression = statement.bind(.text(boundary))
                    condition = "(\(condition) AND \(operand.sql) \(options.caseInsensitive ? "~*" : "~") \(expression))"
                }
            }
            return negated ? "(\(condition)) IS NOT TRUE" : condition
        }
        try check(encoded)
        if encoded.isNaN {
            // IEEE 754, as Swift: NaN equals nothing and orders with nothing (PostgreSQL puts it above every number,
            // equal to itself), so only != holds.
            return (op == .notEqual) != negated ? "TRUE" : "FALSE"
        }
        var parameter = cast(statement.bind(encoded), encoded.wireType)
        if options.caseInsensitive {
            guard operand.column.isStringLike else {
                throw invalid("[c] needs a text column; column '\(operand.column.name)' is \(operand.column.typeName)")
            }
            parameter = "lower(\(parameter))"
        }
        switch (op, negated) {
        case (.equal, false), (.notEqual, true): return "\(subject) = \(parameter)"
        case (.equal, true), (.notEqual, false): return "\(subject) IS DISTINCT FROM \(parameter)"
        default:
            let symbols: [Filter.Operator: String] = [.less: "<", .lessOrEqual: "<=", .greater: ">", .greaterOrEqual: ">="]
            var condition = "\(subject) \(symbols[op]!) \(parameter)"
            if (op == .greater || op == .greaterOrEqual) && holdsNaN {
                // PostgreSQL's NaN is greater than every number; Swift's is not.
                condition = "(\(condition) AND \(subject) <> 'NaN')"
            }
            return negated ? "(\(condition)) IS NOT TRUE" : condition
        }
    }

    /// Whether the key's column is floating-point, so its rows may hold NaN.
    private var holdsNaN: Bool { ["float4", "float8"].contains(operand.column.baseName) }

    /// The expression that holds a BEGINSWITH, CONTAINS or ENDSWITH match to whole Characters (``CharacterBoundary``).
    private func characterBoundary(_ op: Filter.Operator, _ text: String) throws -> String? {
        do throws(CharacterBoundary.Refusal) {
            return try CharacterBoundary.pattern(op, text)
        } catch {
            throw StructPostgresError(
                .unsupportedPredicate,
                "filter on '\(key)': \(op.rawValue) cannot match the string at whole Characters, as Swift does, because \(error.reason); PostgreSQL cannot tell where such a Character ends in the stored text, so nothing is filtered in the client",
                entity: operand.description.entity, table: operand.description.schema.table, column: operand.column.name, property: key)
        }
    }

    /// Whether every `(` of a regular expression is closed and no `)` closes what it did not open: escaped
    /// characters and bracket expressions (`[()]`) do not count.
    static func parenthesesBalance(_ pattern: String) -> Bool {
        var depth = 0
        var characters = pattern.makeIterator()
        var inBracket = false
        var bracketStart = false
        while let character = characters.next() {
            if character == "\\" {
                _ = characters.next()
                bracketStart = false
                continue
            }
            if inBracket {
                // `]` right after `[` or `[^` is a literal.
                if character == "]" && !bracketStart { inBracket = false }
                bracketStart = bracketStart && character == "^"
                continue
            }
            switch character {
            case "[":
                inBracket = true
                bracketStart = true
            case "(":
                depth += 1
            case ")":
                depth -= 1
                if depth < 0 { return false }
            default:
                break
            }
        }
        return depth == 0
    }

    func between(_ lower: any Encodable & Sendable, _ upper: any Encodable & Sendable, negated: Bool, _ statement: inout Statement) throws
        -> String
    {
        let bounds = try [encode(lower), encode(upper)]
        guard !bounds.contains(.null) else { throw invalid("BETWEEN needs two values, not nil") }
        for bound in bounds { try check(bound) }
        // NaN orders with nothing: no value lies between it and another.
        if bounds.contains(where: \.isNaN) { return negated ? "TRUE" : "FALSE" }
        let condition =
            "\(operand.sql) BETWEEN \(cast(statement.bind(bounds[0]), bounds[0].wireType)) AND \(cast(statement.bind(bounds[1]), bounds[1].wireType))"
        return negated ? "(\(condition)) IS NOT TRUE" : condition
    }

    /// `key = ANY($1)`: one parameter, whatever the count.
    func among(_ values: [any Encodable & Sendable], negated: Bool, _ statement: inout Statement) throws -> String {
        let encoded = try values.map(encode)
        let wire = encoded.first { $0 != .null }?.wireType ?? .text
        guard encoded.allSatisfy({ $0 == .null || ($0.wireType == wire && !$0.isArray) }) else {
            throw invalid("the values do not all have one type")
        }
        for value in encoded where value != .null { try check(value) }
        // NaN equals nothing, as in Swift's `contains`: PostgreSQL's `= ANY` would match NaN with NaN.
        let values = encoded.filter { $0 != .null && !$0.isNaN }
        let parameter = statement.bind(array: BinaryColumnArray(element: wire, values: values))
        statement.plannedPerExecution = true
        let list = needsCast(wire) ? "\(parameter)::\(wire.sqlName)[]::\(castTarget)[]" : "\(parameter)::\(wire.sqlName)[]"
        // A nil in the list matches NULL, as in NSPredicate; negation keeps rows the list does not hold.
        var condition = "\(operand.sql) = ANY(\(list))"
        if encoded.contains(.null) { condition = "(\(condition) OR \(operand.sql) IS NULL)" }
        return negated ? "(\(condition)) IS NOT TRUE" : condition
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS and LIKE as a LIKE pattern; the value's own `%`, `_` and `\` match literally.
    static func pattern(for op: Filter.Operator, _ text: String) -> String {
        func escape(_ string: String) -> String {
            string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(
                of: "_", with: "\\_")
        }
        switch op {
        case .beginsWith: return escape(text) + "%"
        case .endsWith: return "%" + escape(text)
        case .contains: return "%" + escape(text) + "%"
        default:
            var pattern = ""
            var escaped = false
            for char in text {
                if escaped {
                    pattern += escape(String(char))
                    escaped = false
                } else if char == "\\" {
                    escaped = true
                } else if char == "*" {
                    pattern += "%"
                } else if char == "?" {
                    pattern += "_"
                } else {
                    pattern += escape(String(char))
                }
            }
            return pattern
        }
    }

    /// The value ``compare(_:_:_:negated:_:)`` binds for `encoded` (an operator that is not a string operator),
    /// checked as it checks it: `nil` when it binds none (a nil, or NaN).
    func boundValue(_ encoded: ColumnValue) throws -> ColumnValue? {
        guard encoded != .null else { return nil }
        try check(encoded)
        return encoded.isNaN ? nil : encoded
    }

    func encode(_ value: any Encodable & Sendable) throws -> ColumnValue {
        let encoded = try RowEncoder.columnValue(of: value, property: key)
        if let problem = encoded.encodingProblem { throw invalid(problem) }
        return encoded
    }

    /// Refuses a value the column cannot be compared with, before anything is sent.
    private func check(_ value: ColumnValue) throws {
        let column = operand.column
        let base = column.baseName
        guard let wire = value.wireType else { return }
        // Ported Core Data models often keep uuids as strings: a string that is a UUID may meet a uuid column.
        let isUUIDText = if case .text(let text) = value { base == "uuid" && UUID(uuidString: text) != nil } else { false }
        let isJSON = base == "jsonb" || base == "json"
        let fits = column.accepts(
            wire, text: column.isStringLike || column.category == "E" || isJSON || column.isArray || isUUIDText, json: isJSON)
        guard fits else {
            let what = Self.describe(value)
            throw invalid("\(what == "integer" ? "an" : "a") \(what) cannot be compared with column '\(column.name)' (\(column.typeName))")
        }
    }

    private static func describe(_ value: ColumnValue) -> String {
        switch value.wireType {
        case .text?: "string"
        case .uuid?: "UUID"
        case .bool?: "Bool"
        case .int2?, .int4?, .int8?: "integer"
        case .float4?, .float8?, .numeric?: "number"
        case .timestamptz?: "Date"
        case .bytea?: "Data"
        case .jsonb?: "JSON value"
        case nil: "nil"
        }
    }

    /// Text into a non-text column, JSON into a non-jsonb one, a UUID into a text column (compared as its text).
    private func needsCast(_ wire: WireType?) -> Bool {
        (wire == .text && !operand.column.isStringLike) || (wire == .jsonb && operand.column.baseName != "jsonb")
            || (wire == .uuid && operand.column.isStringLike)
    }

    private var castTarget: String { operand.column.isStringLike ? "text" : operand.column.castName }

    private func cast(_ parameter: String, _ wire: WireType?) -> String {
        needsCast(wire) ? "\(parameter)::\(castTarget)" : parameter
    }

    private func invalid(_ message: String) -> StructPostgresError {
        StructPostgresError(
            .invalidValue, "filter on '\(key)': \(message)", entity: operand.description.entity,
            table: operand.description.schema.table, column: operand.column.name, property: key)
    }
}
