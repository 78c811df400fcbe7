import Foundation
import Testing
@testable import StructPostgres

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

    @Test func textThatIsNotWhollyANumberIsRefused() {
        #expect(throws: DecodingError.self) { try decode(#"{"big": 1, "price": "12.5 USD", "amount": 1}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"big": 1, "price": 1, "amount": "12.5 USD"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"big": 1.5, "price": 1, "amount": 1}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"big": "1", "price": 1, "amount": 1}"#, options: ImportOptions(numbersFromStrings: false)) }
    }

    @Test func aRecordCannotStartWithASeparator() {
        for payload in ["[{\"a\": 1},, {\"b\": 2}]", "[{\"a\": 1},]", "[,]"] {
            var reader = JSONRecordReader(data: Data(payload.utf8))
            let error = #expect(throws: StructPostgresError.self) { while try reader.next() != nil {} }
            #expect(error?.message.hasPrefix("malformed JSON: expected a record, found") == true, "\(payload)")
        }
    }
}
