import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Decodes a ``JSONValue`` into a `Decodable` model with the import's key mapping and value conversions.
/// Errors are `DecodingError`s whose coding path holds the remote names, for ``ImportFailure/path``.
struct ImportDecoder: Decoder {
    struct Context {
        let options: ImportOptions
        /// Local coding key -> remote member name, from ``ImportOptions/remoteNames``.
        let remoteForLocal: [String: String]
        let dates = ImportDates()

        init(_ options: ImportOptions) {
            self.options = options
            self.remoteForLocal = Dictionary(options.remoteNames.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        }
    }

    let value: JSONValue
    let codingPath: [any CodingKey]
    let context: Context
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw DecodingError.typeMismatch(
                [String: Any].self, .init(codingPath: codingPath, debugDescription: "expected an object, found \(value.kind)"))
        }
        return KeyedDecodingContainer(ImportKeyedContainer<Key>(members: members, codingPath: codingPath, context: context))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw DecodingError.typeMismatch(
                [Any].self, .init(codingPath: codingPath, debugDescription: "expected an array, found \(value.kind)"))
        }
        return ImportUnkeyedContainer(elements: elements, codingPath: codingPath, context: context)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
}

/// A coding key for paths: a member name or an array index.
struct ImportKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; intValue = nil }
    init(intValue: Int) { stringValue = "\(intValue)"; self.intValue = intValue }
}

private struct ImportKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]
    let context: ImportDecoder.Context

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    /// The member a coding key reads: a mapped remote name, the snake_case name, or the key itself.
    private func remote(_ key: Key) -> String {
        let local = key.stringValue
        if let mapped = context.remoteForLocal[local], members[mapped] != nil { return mapped }
        // A remote name mapped to another key belongs to that key only.
        func free(_ name: String) -> Bool { members[name] != nil && context.options.remoteNames[name].map { $0 == local } ?? true }
        if free(local) { return local }
        if context.options.keys == .snakeCase {
            let snake = ColumnNaming.snakeCase.column(for: local)
            if free(snake) { return snake }
        }
        return context.remoteForLocal[local] ?? (context.options.keys == .snakeCase ? ColumnNaming.snakeCase.column(for: local) : local)
    }

    func contains(_ key: Key) -> Bool { members[remote(key)] != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = members[remote(key)] else { return true }
        return value == .null
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        // Relationship slots are filled by fetches, never by payloads: nested records are written through
        // the model's own properties.
        if let slot = T.self as? any RelationshipSlot.Type { return slot.unloadedSlot as! T }
        let name = remote(key)
        let path = codingPath + [ImportKey(stringValue: name)]
        guard let value = members[name] else {
            throw DecodingError.keyNotFound(
                ImportKey(stringValue: name), .init(codingPath: path, debugDescription: "missing required field"))
        }
        return try ImportDecoder(value: value, codingPath: path, context: context).decodeValue(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(for: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(for: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ImportDecoder(value: .object(members), codingPath: codingPath, context: context) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(for: key) }

    private func decoder(for key: Key) throws -> ImportDecoder {
        let name = remote(key)
        return ImportDecoder(value: members[name] ?? .null, codingPath: codingPath + [ImportKey(stringValue: name)], context: context)
    }
}

private struct ImportUnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let context: ImportDecoder.Context
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey], context: ImportDecoder.Context) {
        self.elements = elements
        self.codingPath = codingPath
        self.context = context
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = try next()
        return try decoder.decodeValue(T.self)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }

    private mutating func next() throws -> ImportDecoder {
        let path = codingPath + [ImportKey(intValue: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: path, debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return ImportDecoder(value: elements[currentIndex], codingPath: path, context: context)
    }
}

extension ImportDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        switch value {
        case .bool(let bool): return bool
        case .string(let text) where context.options.numbersFromStrings:
            switch text.lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0": return false
            default: throw mismatch(Bool.self, "expected a boolean, found a string that is not one")
            }
        case .number("0"): return false
        case .number("1"): return true
        default: throw mismatch(Bool.self, "expected a boolean, found \(value.kind)")
        }
    }

    func decode(_ type: String.Type) throws -> String {
        switch value {
        case .string(let text): return text
        case .number(let text) where context.options.numbersFromStrings: return text
        default: throw mismatch(String.self, "expected a string, found \(value.kind)")
        }
    }

    func decode(_ type: Double.Type) throws -> Double { try number(Double.self) { Double($0) } }
    func decode(_ type: Float.Type) throws -> Float { try number(Float.self) { Float($0) } }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(T.self) }

    /// Decodes any value, converting the types JSON has no notation for.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if value == .null, !(T.self is any ExpressibleByNilLiteral.Type) {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath, debugDescription: "expected \(T.self), found null"))
        }
        switch T.self {
        case is Date.Type: return try date() as! T
        case is UUID.Type:
            guard case .string(let text) = value, let uuid = UUID(uuidString: text) else {
                throw mismatch(UUID.self, "expected a UUID string, found \(describe(value, notA: "UUID"))")
            }
            return uuid as! T
        case is URL.Type:
            guard case .string(let text) = value, let url = URL(string: text) else {
                throw mismatch(URL.self, "expected a URL string, found \(describe(value, notA: "URL"))")
            }
            return url as! T
        case is Decimal.Type: return try number(Decimal.self) { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) } as! T
        case is Data.Type:
            guard case .string(let text) = value, let data = Data(base64Encoded: text) else {
                throw mismatch(Data.self, "expected base64 text, found \(describe(value, notA: "base64 text"))")
            }
            return data as! T
        default:
            return try T(from: self)
        }
    }

    private func date() throws -> Date {
        switch (context.options.dates, value) {
        case (.secondsSince1970, _), (.millisecondsSince1970, _):
            let scale = context.options.dates == .secondsSince1970 ? 1.0 : 1_000.0
            let seconds = try number(Double.self) { Double($0) }
            return Date(timeIntervalSince1970: seconds / scale)
        case (.iso8601, .string(let text)):
            if let date = context.dates.iso8601(text) { return date }
            throw mismatch(Date.self, "expected an ISO 8601 date, found a string that is not one")
        default:
            throw mismatch(Date.self, "expected an ISO 8601 date string, found \(value.kind)")
        }
    }

    private func number<N>(_ type: N.Type, _ make: (String) -> N?) throws -> N {
        let text: String
        switch value {
        case .number(let digits): text = digits
        case .string(let string) where context.options.numbersFromStrings: text = string.trimmingCharacters(in: .whitespaces)
        default: throw mismatch(N.self, "expected a number, found \(value.kind)")
        }
        // The whole text must be a number: Decimal(string:) alone would take "12.5 USD" as 12.5.
        guard Double(text) != nil, let number = make(text) else {
            throw mismatch(N.self, "expected a number, found \(describe(value, notA: "number"))")
        }
        return number
    }

    private func integer<I: FixedWidthInteger>() throws -> I {
        let text = try number(String.self) { $0 }
        if let exact = I(text) ?? Self.exactInteger(text) { return exact }
        throw mismatch(I.self, "expected \(I.self), found \(describe(value, notA: "whole number in its range"))")
    }

    /// The integer that a number's text denotes exactly, in any notation (`12.0`, `1e2`, `1.5E1`, `1200e-2`), or
    /// `nil` when it has a fraction or is out of range: never rounded.
    static func exactInteger<I: FixedWidthInteger>(_ text: String) -> I? {
        let parts = text.split(omittingEmptySubsequences: false) { $0 == "e" || $0 == "E" }
        guard parts.count <= 2, var mantissa = parts.first else { return nil }
        var exponent = 0
        if parts.count == 2 {
            guard let written = Int(parts[1]), written.magnitude <= 10_000 else { return nil }
            exponent = written
        }
        let negative = mantissa.first == "-"
        if negative || mantissa.first == "+" { mantissa = mantissa.dropFirst() }
        var digits = Substring(mantissa)
        if let dot = mantissa.firstIndex(of: ".") {
            let fraction = mantissa[mantissa.index(after: dot)...]
            digits = mantissa[..<dot] + fraction
            exponent -= fraction.count
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        digits = digits.drop { $0 == "0" }
        if digits.isEmpty { return 0 }
        if exponent < 0 {
            guard digits.count > -exponent, digits.suffix(-exponent).allSatisfy({ $0 == "0" }) else { return nil }
            digits = digits.dropLast(-exponent)
        } else {
            // More digits than any fixed-width integer holds: out of range.
            guard digits.count + exponent <= 40 else { return nil }
            digits += String(repeating: "0", count: exponent)
        }
        return I((negative ? "-" : "") + digits)
    }

    /// What a value is, never what it holds: errors and failure reports must not quote the payload.
    private func describe(_ value: JSONValue, notA expected: String) -> String {
        switch value {
        case .string, .number: "\(value.kind) that is not a \(expected)"
        default: value.kind
        }
    }

    private func mismatch(_ type: Any.Type, _ message: String) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: message))
    }
}

/// ISO 8601 with or without fractional seconds; one set of formatters per import, used by one task at a time.
final class ImportDates: @unchecked Sendable {
    private let plain = ISO8601DateFormatter()
    private let fractional: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    func iso8601(_ text: String) -> Date? {
        plain.date(from: text) ?? fractional.date(from: text)
    }
}
