import Foundation
import StructPostgresCore

/// Splits SQL text into its statements, as `psql` does: semicolons inside quotes, dollar quotes,
/// quoted identifiers, comments and `BEGIN ATOMIC ... END` function bodies do not end a statement.
///
/// PostgresNIO speaks only the extended protocol, which takes one statement at a time.
package struct SQLScript {
    package struct Statement: Equatable {
        /// The statement's text, without its terminating semicolon.
        package var sql: String
        /// The 1-based line of the script where the statement starts.
        package var line: Int
        /// The highest parameter placeholder (`$3`) outside quotes and comments; 0 without any.
        package var parameters = 0

        package init(sql: String, line: Int, parameters: Int = 0) {
            (self.sql, self.line, self.parameters) = (sql, line, parameters)
        }
    }

    /// The highest parameter placeholder of `sql` outside quotes and comments: how many values it takes.
    package static func parameterCount(_ sql: String) -> Int {
        split(sql).map(\.parameters).max() ?? 0
    }

    package static func split(_ script: String) -> [Statement] {
        let chars = Array(script.unicodeScalars)
        var statements: [Statement] = []
        var current = String.UnicodeScalarView()
        var line = 1
        var startLine = 1
        var hasContent = false
        var parameters = 0
        var i = 0

        func append(_ scalar: Unicode.Scalar) {
            if scalar == "\n" { line += 1 }
            if hasContent { current.append(scalar) }
        }
        func finish() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if hasContent && !text.isEmpty { statements.append(Statement(sql: text, line: startLine, parameters: parameters)) }
            current = String.UnicodeScalarView()
            hasContent = false
            parameters = 0
        }
        func peek(_ offset: Int) -> Unicode.Scalar? { i + offset < chars.count ? chars[i + offset] : nil }
        // Words outside quotes, to follow `BEGIN ATOMIC` bodies, whose `;` belong to the function.
        var word = ""
        var previousWord = ""
        var atomicDepth = 0
        var parenDepth = 0
        func flushWord() {
            guard !word.isEmpty else { return }
            let upper = word.uppercased()
            if previousWord == "BEGIN" && upper == "ATOMIC" {
                atomicDepth += 1
            } else if atomicDepth > 0 && upper == "CASE" {
                atomicDepth += 1
            } else if atomicDepth > 0 && upper == "END" {
                atomicDepth -= 1
            }
            previousWord = upper
            word = ""
        }

        while i < chars.count {
            let c = chars[i]
            if !hasContent && !c.properties.isWhitespace && !(c == "-" && peek(1) == "-") && !(c == "/" && peek(1) == "*") {
                hasContent = true
                startLine = line
            }
            if isWordCharacter(c) {
                word.unicodeScalars.append(c)
                append(c); i += 1
                continue
            }
            flushWord()
            switch c {
            case ";" where atomicDepth > 0 || parenDepth > 0:
                append(c); i += 1
            case "(":
                parenDepth += 1
                append(c); i += 1
            case ")":
                parenDepth = max(0, parenDepth - 1)
                append(c); i += 1
            case ";":
                finish()
                previousWord = ""
                parenDepth = 0
                i += 1
            case "-" where peek(1) == "-":
                while i < chars.count && chars[i] != "\n" { append(chars[i]); i += 1 }
            case "/" where peek(1) == "*":
                var depth = 0
                repeat {
                    if chars[i] == "/" && peek(1) == "*" { depth += 1; append("/"); append("*"); i += 2; continue }
                    if chars[i] == "*" && peek(1) == "/" { depth -= 1; append("*"); append("/"); i += 2; continue }
                    append(chars[i]); i += 1
                } while depth > 0 && i < chars.count
            case "'", "\"":
                let escapes =
                    c == "'" && i > 0 && (chars[i - 1] == "E" || chars[i - 1] == "e")
                    && (i < 2 || !isWordCharacter(chars[i - 2]))
                append(c); i += 1
                while i < chars.count {
                    let d = chars[i]
                    if escapes && d == "\\" && i + 1 < chars.count { append(d); append(chars[i + 1]); i += 2; continue }
                    append(d); i += 1
                    if d == c {
                        if i < chars.count && chars[i] == c { append(c); i += 1; continue }
                        break
                    }
                }
            case "$":
                if let tag = dollarTag(chars, at: i) {
                    for scalar in tag { append(scalar) }
                    i += tag.count
                    while i < chars.count {
                        if chars[i] == "$", chars[i..<min(i + tag.count, chars.count)].elementsEqual(tag) {
                            for scalar in tag { append(scalar) }
                            i += tag.count
                            break
                        }
                        append(chars[i]); i += 1
                    }
                } else {
                    // `$3` is a parameter unless the `$` continues an identifier (`price$1`).
                    if i == 0 || !isWordCharacter(chars[i - 1]) {
                        var number = 0
                        var next = i + 1
                        while next < chars.count,
                            let digit = chars[next].properties.numericType == .decimal ? Int(String(chars[next])) : nil
                        {
                            number = number * 10 + digit
                            next += 1
                        }
                        parameters = max(parameters, number)
                    }
                    append(c); i += 1
                }
            default:
                append(c); i += 1
            }
        }
        finish()
        return statements
    }

    private static func isWordCharacter(_ c: Unicode.Scalar) -> Bool {
        c.properties.isAlphabetic || c == "_" || ("0"..."9").contains(c)
    }

    /// `$$` or `$name$` starting at `index`, unless it is a parameter like `$1`.
    private static func dollarTag(_ chars: [Unicode.Scalar], at index: Int) -> [Unicode.Scalar]? {
        if index > 0, chars[index - 1].properties.isAlphabetic || chars[index - 1] == "_" || ("0"..."9").contains(chars[index - 1]) {
            return nil
        }
        var end = index + 1
        while end < chars.count, chars[end] != "$" {
            let c = chars[end]
            guard c.properties.isAlphabetic || c == "_" || (end > index + 1 && ("0"..."9").contains(c)) else { return nil }
            end += 1
        }
        guard end < chars.count else { return nil }
        return Array(chars[index...end])
    }
}
