import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

@Suite struct ArrayLiteralTests {
    @Test func quotesEveryElementAndEscapesQuotesAndBackslashes() {
        let value = ColumnValue.array([.text("a\"b"), .text("c\\d"), .null, .text("NULL"), .text("")], element: .text)
        #expect(ArrayLiteral.render(value) == #"{"a\"b","c\\d",NULL,"NULL",""}"#)
    }

    @Test func rendersScalarsInPostgreSQLInputForm() {
        let date = Date(timeIntervalSince1970: 0.000001)
        let value = ColumnValue.array(
            [.bool(true), .int8(-5), .float8(.infinity), .float8(.nan), .bytea(Data([0xde, 0xad])), .timestamptz(date)],
            element: .text)
        #expect(ArrayLiteral.render(value) == #"{"t","-5","Infinity","NaN","\\xdead","1970-01-01 00:00:00.000001+00"}"#)
        #expect(ArrayLiteral.timestampText(Date(timeIntervalSince1970: -0.000001)) == "1969-12-31 23:59:59.999999+00")
    }
}

@Suite struct CalendarTests {
    @Test func datesUseTheProlepticGregorianCalendar() {
        // 1000-01-01T00:00:00Z is -30610224000 s since 1970 in the proleptic Gregorian calendar.
        #expect(ArrayLiteral.timestampText(Date(timeIntervalSince1970: -30_610_224_000)) == "1000-01-01 00:00:00.000000+00")
        #expect(ArrayLiteral.timestampText(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29 00:00:00.000000+00")
        // 1 BC is year 0: 0001-12-31 BC is one day before 0001-01-01.
        #expect(ArrayLiteral.timestampText(Date(timeIntervalSince1970: -62_135_596_800 - 86_400)) == "0001-12-31 00:00:00.000000+00 BC")
    }

    @Test func numericModifiersHaveSignedScales() {
        #expect(DatabaseSession.numericPrecision(Int32((10 << 16) | 2) + 4) == (10, 2))
        #expect(DatabaseSession.numericPrecision(Int32((5 << 16) | (0x7ff & -2)) + 4) == (5, -2))
    }

    @Test func quotedValuesInServerMessagesAreMasked() {
        #expect(maskQuoted(#"invalid input syntax for type uuid: "secret""#) == #"invalid input syntax for type uuid: "****""#)
        #expect(maskQuoted("value too long for type character varying(5)") == "value too long for type character varying(5)")
    }
}
