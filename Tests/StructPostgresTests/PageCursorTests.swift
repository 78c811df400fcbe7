import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

/// A page cursor is URL-safe text that only the key it was sealed with opens, and that shows nothing of the values
/// it holds. Without a server.
@Suite struct PageCursorTests {
    private static let position = PagePosition(
        order: 0x0102_0304_0506_0708, filter: 42,
        cells: [
            .init(dataType: 25, binary: true, bytes: Array("Ursula K. Le Guin".utf8)),
            .init(dataType: 0, binary: true, bytes: nil),
            .init(dataType: 2950, binary: true, bytes: Array(repeating: 0xAB, count: 16)),
        ])

    @Test func aSealedPositionOpensWithItsKeyAndShowsNoValue() throws {
        let seal = PageCursorSeal(secret: nil)
        let cursor = try seal.seal(Self.position)
        #expect(
            cursor.description.utf8.allSatisfy {
                $0 < 128 && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber || $0 == 0x2D || $0 == 0x5F)
            })
        #expect(PageCursor(cursor.description) == cursor)
        #expect(try seal.open(cursor, entity: "Book", table: "books") == Self.position)
        let bytes = try #require(cursor.bytes)
        #expect(!Data(bytes).contains(Data("Ursula".utf8)))
        // Sealed twice, a position gives two texts (a nonce of its own each time).
        #expect(try seal.seal(Self.position) != cursor)
    }

    @Test func anotherKeyOrAnAlteredCursorIsRefusedByName() throws {
        let cursor = try PageCursorSeal(secret: "one secret").seal(Self.position)
        #expect(try PageCursorSeal(secret: "one secret").open(cursor, entity: "Book", table: "books") == Self.position)
        for seal in [PageCursorSeal(secret: nil), PageCursorSeal(secret: "another secret")] {
            let error = #expect(throws: StructPostgresError.self) { try seal.open(cursor, entity: "Book", table: "books") }
            #expect(error?.code == .invalidValue)
            #expect(error?.message.contains("not issued by this service") == true)
            #expect(error?.table == "books")
        }
        var text = Array(cursor.description)
        text[text.count / 2] = text[text.count / 2] == "A" ? "B" : "A"
        let altered = try #require(PageCursor(String(text)))
        #expect(throws: StructPostgresError.self) { try PageCursorSeal(secret: "one secret").open(altered, entity: "Book", table: "books") }
    }

    @Test func onlyBase64URLTextIsACursor() throws {
        #expect(PageCursor("") == nil)
        #expect(PageCursor("abc+def") == nil)
        #expect(PageCursor("abc/def") == nil)
        #expect(PageCursor("abc=") == nil)
        #expect(PageCursor(String(repeating: "a", count: PageCursor.maximumLength + 1)) == nil)
        #expect(PageCursor("Ab-_09") != nil)
        let json = try JSONEncoder().encode(["next": PageCursor("Ab-_09")!])
        #expect(String(decoding: json, as: UTF8.self) == #"{"next":"Ab-_09"}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([String: PageCursor].self, from: Data(#"{"next":"a b"}"#.utf8)) }
    }

    @Test func base64URLRoundTripsEveryLength() {
        var random = SystemRandomNumberGenerator()
        for count in 0..<70 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes, "\(count) bytes")
        }
        #expect(Base64URL.encode(Array("hello?>".utf8)) == "aGVsbG8_Pg")
    }

    @Test func aPositionThatDoesNotDecodeIsNone() {
        let encoded = Self.position.encoded()
        #expect(PagePosition(decoding: encoded) == Self.position)
        #expect(PagePosition(decoding: Array(encoded.dropLast())) == nil)
        #expect(PagePosition(decoding: encoded + [0]) == nil)
        var otherVersion = encoded
        otherVersion[0] = 9
        #expect(PagePosition(decoding: otherVersion) == nil)
    }
}
