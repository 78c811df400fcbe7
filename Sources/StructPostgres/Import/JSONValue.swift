import StructPostgresCore
import StructPostgresDriver

/// A parsed JSON value. Numbers keep their text, so integers of any size and decimals convert exactly.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A strict JSON parser (RFC 8259) over bytes, whose errors give the line, column and byte offset.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    /// Where `bytes` starts in the whole document, for positions in errors.
    private let base: Int

    private init(_ bytes: UnsafeBufferPointer<UInt8>, base: Int) {
        self.bytes = bytes
        self.base = base
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, base: Int = 0) throws -> JSONValue {
        var parser = JSONParser(bytes, base: base)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    static func parse(_ text: String) throws -> JSONValue {
        var copy = text
        return try copy.withUTF8 { try parse($0) }
    }

    private mutating func value(depth: Int) throws -> JSONValue {
        guard depth < 512 else { throw error("nesting deeper than 512 levels") }
        guard index < bytes.count else { throw error("the JSON ends where a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default:
            let byte = bytes[index]
            let shown = byte < 0x80 ? "character '\(Character(UnicodeScalar(byte)))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
            throw error("unexpected \(shown) where a value was expected")
        }
    }

    private mutating func object(depth: Int) throws -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { throw error("expected a member name in double quotes") }
            let key = try string()
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw error("expected ':' after the member name \"\(key)\"") }
            index += 1
            skipWhitespace()
            members[key] = try value(depth: depth + 1)
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw error("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func array(depth: Int) throws -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw error("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func string() throws -> String {
        let start = index
        index += 1
        var scalars = String.UnicodeScalarView()
        var plainStart = index
        func flushPlain(_ end: Int) throws {
            guard end > plainStart else { return }
            guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[plainStart..<end]), as: UTF8.self) else {
                throw error("invalid UTF-8 in a string")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try flushPlain(index)
                index += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("a control character must be escaped in a string") }
            if byte == UInt8(ascii: "\\") {
                try flushPlain(index)
                index += 1
                guard index < bytes.count else { break }
                switch bytes[index] {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\\"), bytes[index + 2] == UInt8(ascii: "u") else {
                            throw error("a lone surrogate in a \\u escape")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("a lone surrogate in a \\u escape") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = UnicodeScalar(code) else { throw error("an invalid \\u escape") }
                    scalars.append(scalar)
                default:
                    throw error("an invalid escape in a string")
                }
                index += 1
                plainStart = index
                continue
            }
            index += 1
        }
        index = start
        throw error("the string that starts here is not closed")
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 < bytes.count else { throw error("an incomplete \\u escape") }
        var value: UInt32 = 0
        for offset in 1...4 {
            let byte = bytes[index + offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("an invalid \\u escape")
            }
            value = value * 16 + digit
        }
        index += 4
        return value
    }

    private mutating func number() throws -> String {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { throw error("a digit must follow '-'") }
        if first == UInt8(ascii: "0") { index += 1 } else { skipDigits() }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let digit = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { throw error("a digit must follow '.'") }
            skipDigits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let digit = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else {
                throw error("a digit must follow the exponent")
            }
            skipDigits()
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
            word.withUTF8Buffer({ expected in expected.elementsEqual(UnsafeBufferPointer(rebasing: bytes[index..<(index + count)])) })
        else { throw error("unexpected text where a value was expected") }
        index += count
    }

    private mutating func skipDigits() {
        while let byte = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
    }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func error(_ message: String) -> StructPostgresError {
        var line = 1
        var column = 1
        for byte in bytes[..<min(index, bytes.count)] {
            if byte == 0x0A { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        let place = base == 0 ? "line \(line), column \(column)" : "byte \(base + index + 1)"
        var error = StructPostgresError(.invalidValue, "malformed JSON: \(message) (\(place))")
        error.position = base + index + 1
        return error
    }
}
