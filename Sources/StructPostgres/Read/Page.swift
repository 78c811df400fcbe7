import StructPostgresCore
import StructPostgresDriver

/// One page of a fetch in keyset order: at most the page size of models, the cursor of the next page, and the
/// number of matching rows when asked for.
///
/// ```swift
/// var page = try await db.fetch(BookModel.self, sortedBy: [.ascending("title")], pageSize: 20)
/// while let next = page.next {
///     page = try await db.fetch(BookModel.self, sortedBy: [.ascending("title")], pageSize: 20, after: next)
/// }
/// ```
public struct Page<Model: Sendable>: Sendable {
    /// The page's models, in the fetch's order.
    public var items: [Model]
    /// The cursor that continues after the last of ``items``; `nil` on the last page.
    public var next: PageCursor?
    /// How many rows match the filter, every page together, when the fetch asked for it (a `count(*)` more).
    public var total: Int?

    /// A page of `items`.
    public init(items: [Model], next: PageCursor?, total: Int? = nil) {
        self.items = items
        self.next = next
        self.total = total
    }
}

extension Page: Encodable where Model: Encodable {}

extension Page: RowCounting {
    package var rowsCounted: Int { items.count }
}

/// Where a page ends: an opaque, URL-safe text to hand back for the next page (in a `next` link, a query parameter).
///
/// A cursor holds the sort's values of the page's last row (its unique key included), sealed with the service's
/// key (ChaCha20-Poly1305: encrypted and authenticated), so a client can neither read the values nor alter them.
/// It also holds digests of the sort and of the filter it was made for: another sort or filter fails by name. The
/// key is new each time a service starts unless ``PostgresConfiguration/pageCursorSecret`` is set, so without a
/// secret a cursor stops working when the service restarts (and is refused by another instance behind the same
/// load balancer); with one, every service sharing the secret accepts it.
///
/// ```swift
/// let after = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "after" }?.value
/// let page = try await db.fetch(BookModel.self, sortedBy: [.ascending("title")], pageSize: 20, after: after.flatMap { PageCursor($0) })
/// ```
public struct PageCursor: Sendable, Hashable, Codable, LosslessStringConvertible {
    /// The cursor as URL-safe text (base64url, without padding).
    public let description: String

    /// The cursor of `text`, or `nil` when it is not a cursor's text (empty, too long, or not base64url). A text of
    /// the right form whose seal does not open fails the fetch that receives it, by name.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength, text.utf8.allSatisfy(Self.isBase64URL) else { return nil }
        description = text
    }

    init(sealed bytes: [UInt8]) { description = Base64URL.encode(bytes) }

    /// The sealed bytes.
    var bytes: [UInt8]? { Base64URL.decode(description) }

    /// Decodes from a single string.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let cursor = PageCursor(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a page cursor"))
        }
        self = cursor
    }

    /// Encodes as a single string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Longer texts are refused unread.
    static let maximumLength = 8_192

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
    }
}

/// Base64 with `-` and `_` for `+` and `/`, without padding (RFC 4648, section 5).
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(0) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<(chunk.count + 1) { out.append(alphabet[Int(value >> (18 - 6 * UInt32(position)) & 63)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt32] = []
        for byte in text.utf8 {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            values.append(UInt32(value))
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            let value = chunk.enumerated().reduce(0) { $0 | $1.element << (18 - 6 * UInt32($1.offset)) }
            for position in 0..<(chunk.count - 1) { out.append(UInt8(truncatingIfNeeded: value >> (16 - 8 * UInt32(position)))) }
            index += 4
        }
        return out
    }
}
