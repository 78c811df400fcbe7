import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Numbers: Decodable, Equatable {
    var big: Int64
    var price: Double
    var amount: Decimal
}

private func decode(_ json: String, options: ImportOptions = ImportOptions()) throws -> Numbers {
    try ImportDecoder(value: try JSONParser.parse(json), codingPath: [], context: .init(options)).decodeValue(Numbers.self)
}

@Suite struct ImportDecoderTests {
    @Test func integersAndDecimalsAreExact() throws {
        let value = try decode(#"{"big": 9007199254740993.0, "price": "12.5", "amount": "0.10"}"#)
        #expect(value == Numbers(big: 9_007_199_254_740_993, price: 12.5, amount: Decimal(string: "0.10")!))
        #expect(try decode(#"{"big": "42", "price": 1, "amount": 3}"#).big == 42)
    }

    /// A whole number is an integer in any notation; a fraction or a value out of range is refused, never rounded.
    @Test func integersAreReadInAnyNotationButNeverRounded() throws {
        let exact: [(String, Int64)] = [
            ("1e2", 100), ("1E2", 100), ("1.5e1", 15), ("1200e-2", 12), ("-2.50e1", -25), ("0e5", 0), ("0.000", 0),
            ("12.000", 12), ("9.223372036854775807e18", Int64.max), ("-9223372036854775808.0", Int64.min), ("\"1e3\"", 1_000),
        ]
        for (text, expected) in exact {
            #expect(try decode(#"{"big": \#(text), "price": 1, "amount": 1}"#).big == expected, "\(text)")
        }
        for text in ["1.5", "1e-2", "15e-1", "1e19", "9.223372036854775808e18", "1e400", "1e-9223372036854775808", "\"2e-1\""] {
            let error = #expect(throws: DecodingError.self, "\(text)") { try decode(#"{"big": \#(text), "price": 1, "amount": 1}"#) }
            if case .typeMismatch(_, let context)? = error {
                #expect(context.debugDescription.contains("whole number in its range"), "\(text)")
            }
        }
    }

    @Test func textThatIsNotWhollyANumberIsRefused() {
        #expect(throws: DecodingError.self) { try decode(#"{"big": 1, "price": "12.5 USD", "amount": 1}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"big": 1, "price": 1, "amount": "12.5 USD"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"big": 1.5, "price": 1, "amount": 1}"#) }
        #expect(throws: DecodingError.self) {
            try decode(#"{"big": "1", "price": 1, "amount": 1}"#, options: ImportOptions(numbersFromStrings: false))
        }
    }

    /// A UTF-8 byte order mark before the payload is skipped; a stray non-ASCII byte is named by its value.
    @Test func aByteOrderMarkIsSkipped() throws {
        var reader = JSONRecordReader(data: Data([0xEF, 0xBB, 0xBF] + Array(#"[{"a": 1}, {"a": 2}]"#.utf8)))
        var records = 0
        while try reader.next() != nil { records += 1 }
        #expect(records == 2)
        var empty = JSONRecordReader(data: Data([0xEF, 0xBB, 0xBF] + Array("[]".utf8)))
        #expect(try empty.next() == nil)
        let stray = #expect(throws: StructPostgresError.self) { try JSONParser.parse(String(decoding: [0xC3, 0xAF], as: UTF8.self)) }
        #expect(stray?.message.contains("unexpected byte 0xC3") == true, "\(stray?.message ?? "")")
    }

    @Test func aRecordCannotStartWithASeparator() {
        for payload in ["[{\"a\": 1},, {\"b\": 2}]", "[{\"a\": 1},]", "[,]"] {
            var reader = JSONRecordReader(data: Data(payload.utf8))
            let error = #expect(throws: StructPostgresError.self) { while try reader.next() != nil {} }
            #expect(error?.message.hasPrefix("malformed JSON: expected a record, found") == true, "\(payload)")
        }
    }
}
