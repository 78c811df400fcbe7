import Foundation
import Testing
@testable import StructPostgres

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
