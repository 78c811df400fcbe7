/// `sql` with every literal masked, for errors, debug logs and spans (`db.query.text`): SQL written by hand
/// (`unsafeSQL`, a migration) may hold a password, an account number or other values, and OpenTelemetry's database
/// conventions keep literals out of the query text.
///
/// - A string keeps its quotes and prefix: `'****'`, `E'****'`, `B'****'`, `X'****'`, `N'****'`, `U&'****'`.
/// - A dollar-quoted string keeps its tags: `$$****$$`, `$body$****$body$`.
/// - A number (`42`, `1.5`, `.5`, `1.5e10`, `0x1F`, `1_000`) becomes `?`, OpenTelemetry's placeholder.
///
/// Kept as written: parameters (`$1`), identifiers, digits and all (`t1`, `col_2`, `"a1"`, `U&"a1"`), keywords,
/// operators and comments. The library's own statements bind their values: most hold nothing to mask and are
/// returned as they are after one cheap scan; a number the library writes itself (`LIMIT 50`, `FETCH 256 FROM`,
/// `SELECT 1`) is masked like any other.
package func maskingLiterals(_ sql: String) -> String {
    guard SQLLiteralMasker.mayHoldLiteral(sql) else { return sql }
    return SQLLiteralMasker(sql).masked()
}

/// The lexer behind ``maskingLiterals(_:)``: PostgreSQL's lexical rules, on UTF-8 bytes (every byte that matters is
/// ASCII; a byte of a multi-byte character is part of an identifier, as in PostgreSQL).
struct SQLLiteralMasker {
    private let bytes: [UInt8]
    private var output: [UInt8] = []
    private var index = 0

    init(_ sql: String) {
        bytes = Array(sql.utf8)
        output.reserveCapacity(bytes.count)
    }

    /// Whether `sql` may hold a literal: a quote, a `$` that starts no parameter, or a digit that does not continue
    /// an identifier or a parameter. One pass, no allocation.
    static func mayHoldLiteral(_ sql: String) -> Bool {
        var previous: UInt8 = 0x20
        for byte in sql.utf8 {
            if byte == quote || (previous == dollar && !isDigit(byte)) || (isDigit(byte) && !continuesIdentifier(previous)) {
                return true
            }
            previous = byte
        }
        return previous == dollar
    }

    consuming func masked() -> String {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == doubleQuote {
                copyQuotedIdentifier()
            } else if byte == quote {
                maskString(escapes: false)
            } else if byte == dollar {
                dollarToken()
            } else if Self.isDigit(byte)
                || (byte == dot && isDigit(at: index + 1) && !continuesIdentifier(at: index - 1) && self[index - 1] != dot)
            {
                skipNumber()
                output.append(questionMark)
            } else if byte == minus && self[index + 1] == minus {
                copyLineComment()
            } else if byte == slash && self[index + 1] == asterisk {
                copyBlockComment()
            } else if startsIdentifier(byte) {
                wordToken()
            } else {
                output.append(byte)
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Tokens

    /// A word: a string's prefix (`E'`, `B'`, `X'`, `N'`, `U&'`, `U&"`), or an identifier or keyword, copied whole so
    /// that its digits (`t1`) and `$` (`a$1`) stay part of it.
    private mutating func wordToken() {
        let byte = bytes[index] | 0x20  // lowercased, for letters
        if self[index + 1] == quote,
            byte == UInt8(ascii: "e") || byte == UInt8(ascii: "b") || byte == UInt8(ascii: "x") || byte == UInt8(ascii: "n")
        {
            output.append(bytes[index])
            index += 1
            maskString(escapes: byte == UInt8(ascii: "e"))
            return
        }
        if byte == UInt8(ascii: "u"), self[index + 1] == ampersand, self[index + 2] == quote || self[index + 2] == doubleQuote {
            output.append(contentsOf: bytes[index...index + 1])
            index += 2
            if bytes[index] == quote { maskString(escapes: false) } else { copyQuotedIdentifier() }
            return
        }
        let start = index
        while index < bytes.count, continuesIdentifier(bytes[index]) { index += 1 }
        output.append(contentsOf: bytes[start..<index])
    }

    /// `'...'` (a doubled quote inside), or with `escapes` (`E'...'`) a backslash escaping the next byte: masked,
    /// unterminated to the end.
    private mutating func maskString(escapes: Bool) {
        index += 1
        while index < bytes.count {
            if escapes && bytes[index] == backslash {
                index += 2
            } else if bytes[index] == quote {
                index += 1
                guard self[index] == quote else { break }
                index += 1
            } else {
                index += 1
            }
        }
        output.append(contentsOf: "'****'".utf8)
    }

    /// `"..."` with doubled quotes inside: an identifier, copied as it is.
    private mutating func copyQuotedIdentifier() {
        let start = index
        index += 1
        while index < bytes.count {
            if bytes[index] == doubleQuote {
                index += 1
                guard self[index] == doubleQuote else { break }
            }
            index += 1
        }
        output.append(contentsOf: bytes[start..<min(index, bytes.count)])
    }

    /// `$1` (a parameter, kept), `$tag$...$tag$` (a dollar-quoted string, masked), or a lone `$`.
    private mutating func dollarToken() {
        var end = index + 1
        if isDigit(at: end) {
            while isDigit(at: end) { end += 1 }
            output.append(contentsOf: bytes[index..<end])
            index = end
            return
        }
        while end < bytes.count, bytes[end] != dollar, continuesIdentifier(bytes[end]) { end += 1 }
        guard end < bytes.count, bytes[end] == dollar, end == index + 1 || startsIdentifier(bytes[index + 1]) else {
            output.append(dollar)
            index += 1
            return
        }
        let tag = bytes[index...end]
        output.append(contentsOf: tag)
        output.append(contentsOf: "****".utf8)
        output.append(contentsOf: tag)
        index = end + 1
        while index < bytes.count {
            if bytes[index] == dollar, bytes[index...].starts(with: tag) {
                index += tag.count
                return
            }
            index += 1
        }
    }

    /// A numeric constant: digits with `_` separators, a fraction, an exponent (`1.5e-10`), or a `0x`/`0o`/`0b`
    /// integer; trailing letters stay for the word that follows.
    private mutating func skipNumber() {
        if bytes[index] == UInt8(ascii: "0"), let radix = self[index + 1].map({ $0 | 0x20 }),
            radix == UInt8(ascii: "x") || radix == UInt8(ascii: "o") || radix == UInt8(ascii: "b"), isHexDigit(at: index + 2)
        {
            index += 2
            while isHexDigit(at: index) || self[index] == underscore { index += 1 }
            return
        }
        while isDigit(at: index) || self[index] == underscore { index += 1 }
        if self[index] == dot, self[index + 1] != dot {
            index += 1
            while isDigit(at: index) || self[index] == underscore { index += 1 }
        }
        if let e = self[index], e | 0x20 == UInt8(ascii: "e") {
            var exponent = index + 1
            if self[exponent] == plus || self[exponent] == minus { exponent += 1 }
            if isDigit(at: exponent) {
                index = exponent
                while isDigit(at: index) { index += 1 }
            }
        }
    }

    /// `-- ...` to the end of the line: copied (a comment holds no literal, and tags such as sqlcommenter's stay).
    private mutating func copyLineComment() {
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
        output.append(contentsOf: bytes[start..<index])
    }

    /// `/* ... */`, nested as PostgreSQL nests them: copied.
    private mutating func copyBlockComment() {
        let start = index
        var depth = 0
        while index < bytes.count {
            if bytes[index] == slash, self[index + 1] == asterisk {
                depth += 1
                index += 2
            } else if bytes[index] == asterisk, self[index + 1] == slash {
                depth -= 1
                index += 2
                if depth == 0 { break }
            } else {
                index += 1
            }
        }
        output.append(contentsOf: bytes[start..<min(index, bytes.count)])
    }

    // MARK: Bytes

    private subscript(_ position: Int) -> UInt8? {
        position >= 0 && position < bytes.count ? bytes[position] : nil
    }

    private func isDigit(at position: Int) -> Bool { self[position].map(Self.isDigit) ?? false }

    private func isHexDigit(at position: Int) -> Bool {
        guard let byte = self[position] else { return false }
        return Self.isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }

    private func continuesIdentifier(at position: Int) -> Bool { self[position].map(Self.continuesIdentifier) ?? false }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// A letter, `_`, or a byte of a multi-byte character.
    private static func startsIdentifier(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || byte == underscore || byte >= 0x80
    }

    private static func continuesIdentifier(_ byte: UInt8) -> Bool {
        startsIdentifier(byte) || isDigit(byte) || byte == dollar
    }

    private func startsIdentifier(_ byte: UInt8) -> Bool { Self.startsIdentifier(byte) }
    private func continuesIdentifier(_ byte: UInt8) -> Bool { Self.continuesIdentifier(byte) }
}

private let quote = UInt8(ascii: "'")
private let doubleQuote = UInt8(ascii: "\"")
private let dollar = UInt8(ascii: "$")
private let dot = UInt8(ascii: ".")
private let minus = UInt8(ascii: "-")
private let plus = UInt8(ascii: "+")
private let slash = UInt8(ascii: "/")
private let asterisk = UInt8(ascii: "*")
private let backslash = UInt8(ascii: "\\")
private let ampersand = UInt8(ascii: "&")
private let underscore = UInt8(ascii: "_")
private let questionMark = UInt8(ascii: "?")
