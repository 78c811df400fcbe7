import Crypto
import Foundation
import StructPostgresCore
import StructPostgresDriver

extension Filter {
    /// A digest of the filter as it was built (keys, operators, options and the values it binds, each encoded as it
    /// is bound), the same in every process: what a page cursor keeps to recognize the filter it was made for.
    /// The same question built another way (`10` against `10.0`) has another digest.
    /// - Throws: the error of a part that cannot be compiled, or of a value that cannot be encoded.
    func fingerprint() throws -> UInt64 {
        var writer = FingerprintWriter()
        try writer.node(node)
        return writer.digest
    }
}

/// Writes filters and values as unambiguous bytes (a tag, then lengths before variable parts) into a SHA-256.
struct FingerprintWriter {
    private var hasher = SHA256()

    /// The first eight bytes of the digest.
    var digest: UInt64 {
        hasher.finalize().prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func byte(_ byte: UInt8) { hasher.update(data: [byte]) }

    mutating func text(_ text: String) {
        let bytes = Array(text.utf8)
        number(UInt64(bytes.count))
        hasher.update(data: bytes)
    }

    mutating func number(_ number: UInt64) {
        hasher.update(data: (0..<8).map { UInt8(truncatingIfNeeded: number >> (56 - 8 * $0)) })
    }

    mutating func node(_ node: Filter.Node) throws {
        switch node {
        case .compare(let key, let op, let value, let options):
            byte(1)
            self.text(key)
            self.text(op.rawValue)
            byte(UInt8(options.caseInsensitive ? 1 : 0) | UInt8(options.diacriticInsensitive ? 2 : 0))
            try self.value(value, key: key)
        case .between(let key, let lower, let upper):
            byte(2)
            self.text(key)
            try self.value(lower, key: key)
            try self.value(upper, key: key)
        case .isNull(let key, let isNull):
            byte(3)
            self.text(key)
            byte(isNull ? 1 : 0)
        case .among(let key, let values):
            byte(4)
            self.text(key)
            number(UInt64(values.count))
            for value in values { try self.value(value, key: key) }
        case .constant(let value):
            byte(value ? 5 : 6)
        case .quantified(let quantifier, let inner):
            byte(7)
            byte(quantifier == .any ? 0 : quantifier == .all ? 1 : 2)
            try self.node(inner)
        case .all(let nodes), .any(let nodes):
            if case .all = node { byte(8) } else { byte(9) }
            number(UInt64(nodes.count))
            for inner in nodes { try self.node(inner) }
        case .not(let inner):
            byte(10)
            try self.node(inner)
        case .invalid(let error):
            throw error
        }
    }

    private mutating func value(_ value: any Encodable & Sendable, key: String) throws {
        self.value(try RowEncoder.columnValue(of: value, property: key))
    }

    mutating func value(_ value: ColumnValue) {
        switch value {
        case .null: byte(0)
        case .uuid(let uuid):
            byte(1)
            self.text(uuid.uuidString)
        case .text(let text):
            byte(2)
            self.text(text)
        case .bool(let bool): byte(bool ? 3 : 4)
        case .int2(let int):
            byte(5)
            number(UInt64(bitPattern: Int64(int)))
        case .int4(let int):
            byte(6)
            number(UInt64(bitPattern: Int64(int)))
        case .int8(let int):
            byte(7)
            number(UInt64(bitPattern: int))
        case .float4(let float):
            byte(8)
            number(UInt64(float.bitPattern))
        case .float8(let double):
            byte(9)
            number(double.bitPattern)
        case .numeric(let decimal):
            byte(10)
            self.text(decimal.description)
        case .timestamptz(let date):
            byte(11)
            number(date.timeIntervalSince1970.bitPattern)
        case .bytea(let data):
            byte(12)
            number(UInt64(data.count))
            hasher.update(data: data)
        case .jsonb(let json):
            byte(13)
            self.text(json)
        case .array(let elements, let element):
            byte(14)
            self.text(element?.rawValue ?? "")
            number(UInt64(elements.count))
            for inner in elements { self.value(inner) }
        }
    }
}
