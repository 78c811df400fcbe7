import StructPostgresCore
import StructPostgresDriver

/// Splits an NSPredicate format string into tokens, each with its character offset for error carets.
struct PredicateLexer {
    enum Kind: Equatable {
        case identifier(String)
        /// `#name`: a key even when it spells a keyword.
        case escapedKey(String)
        case string(String)
        case number(String)
        case placeholder(String)
        case symbol(String)
        case modifier(String)
        case end
    }

    struct Token: Equatable {
        let kind: Kind
        let position: Int
    }

    static let placeholders = ["%@", "%K", "%d", "%i", "%f", "%lld", "%ld", "%lu", "%llu", "%u", "%g", "%hd", "%hi", "%qd"]

    static func tokens(_ format: String) throws -> [Token] {
        let characters = Array(format)
        var tokens: [Token] = []
        var index = 0
        func fail(_ message: String, _ at: Int) -> StructPostgresError { PredicateSyntax.error(message, format: format, at: at) }

        while index < characters.count {
            let char = characters[index]
            let start = index
            if char.isWhitespace {
                index += 1
            } else if char == "'" || char == "\"" {
                var text = ""
                index += 1
                var closed = false
                while index < characters.count {
                    let c = characters[index]
                    if c == "\\", index + 1 < characters.count {
                        let next = characters[index + 1]
                        switch next {
                        case "n": text.append("\n")
                        case "t": text.append("\t")
                        default: text.append(next)
                        }
                        index += 2
                    } else if c == char {
                        index += 1
                        closed = true
                        break
                    } else {
                        text.append(c)
                        index += 1
                    }
                }
                guard closed else { throw fail("the string that starts here is not closed", start) }
                tokens.append(Token(kind: .string(text), position: start))
            } else if char == "%" {
                let rest = String(characters[index...].prefix(4))
                guard let placeholder = placeholders.sorted(by: { $0.count > $1.count }).first(where: { rest.hasPrefix($0) }) else {
                    throw fail("unknown substitution; use %@, %K, %d, %i, %f or %lld", start)
                }
                tokens.append(Token(kind: .placeholder(placeholder), position: start))
                index += placeholder.count
            } else if char.isNumber || (char == "." && index + 1 < characters.count && characters[index + 1].isNumber) {
                var text = ""
                while index < characters.count,
                    characters[index].isNumber || characters[index] == "."
                        || ((characters[index] == "e" || characters[index] == "E") && !text.contains("e"))
                        || ((characters[index] == "-" || characters[index] == "+") && (text.last == "e" || text.last == "E"))
                {
                    text.append(characters[index] == "E" ? "e" : characters[index])
                    index += 1
                }
                guard Double(text) != nil else { throw fail("'\(text)' is not a number", start) }
                tokens.append(Token(kind: .number(text), position: start))
            } else if char.isLetter || char == "_" || char == "$" || char == "@" || char == "#" {
                var text = char == "#" ? "" : String(char)
                index += 1
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || characters[index] == "_" || characters[index] == "."
                        || characters[index] == "@"
                {
                    text.append(characters[index])
                    index += 1
                }
                tokens.append(Token(kind: char == "#" ? .escapedKey(text) : .identifier(text), position: start))
            } else if char == "[" {
                guard let close = characters[index...].firstIndex(of: "]") else {
                    throw fail("the modifier that starts here is not closed", start)
                }
                let modifier = String(characters[(index + 1)..<close]).lowercased()
                guard !modifier.isEmpty, modifier.allSatisfy({ $0 == "c" || $0 == "d" }) else {
                    throw fail("unknown modifier '[\(modifier)]'; use [c], [d] or [cd]", start)
                }
                tokens.append(Token(kind: .modifier(modifier), position: start))
                index = close + 1
            } else {
                let two = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                    tokens.append(Token(kind: .symbol(two), position: start))
                    index += 2
                } else if "=<>!(),{}-".contains(char) {
                    tokens.append(Token(kind: .symbol(String(char)), position: start))
                    index += 1
                } else {
                    throw fail("unexpected character '\(char)'", start)
                }
            }
        }
        tokens.append(Token(kind: .end, position: characters.count))
        return tokens
    }
}

/// Error messages that show where in the format string the problem is.
enum PredicateSyntax {
    static func error(_ message: String, format: String, at position: Int) -> StructPostgresError {
        var error = StructPostgresError(
            .invalidValue,
            "malformed predicate: \(message) (at character \(position + 1))\n  \(format)\n  \(String(repeating: " ", count: position))^")
        error.position = position + 1
        return error
    }
}
