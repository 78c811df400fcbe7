import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Book: StoredModel {
    static let table = "books"
    var uuid: UUID
    var title: String?
    var price: Double
    var pages: Int32
    var publishedAt: Date?
}

/// The SQL and bound values of a format-string predicate on `books`.
private func render(_ format: String, _ arguments: (any Encodable & Sendable)?...) throws -> (sql: String, values: [ColumnValue]) {
    try render(try Filter(format: format, arguments: arguments))
}

/// The SQL and bound values of a filter on `books`.
private func render(_ filter: Filter) throws -> (sql: String, values: [ColumnValue]) {
    let schema = TableSchema.fixture(
        "books",
        [
            ("uuid", "uuid", "uuid", "U"), ("title", "text", "text", "S"),
            ("price", "double precision", "float8", "N"), ("pages", "integer", "int4", "N"),
            ("published_at", "timestamp with time zone", "timestamptz", "D"),
        ])
    let description = try EntityDescription(Book.self, schema: schema)
    var statement = Statement(sql: "")
    var builder = FilterSQL(relationships: [:])
    let sql = try builder.condition(filter.node, in: .init(description: description, qualifier: "b"), into: &statement)
    return (sql, statement.values)
}

@Suite struct PredicateTests {
    @Test(arguments: [
        ("title == 'Dune'", #"b."title" = $1"#), ("title = 'Dune'", #"b."title" = $1"#),
        ("title != 'Dune'", #"b."title" IS DISTINCT FROM $1"#), ("title <> 'Dune'", #"b."title" IS DISTINCT FROM $1"#),
        ("price < 10", #"b."price" < $1"#), ("price <= 10", #"b."price" <= $1"#), ("price =< 10", #"b."price" <= $1"#),
        ("price > 10", #"(b."price" > $1 AND b."price" <> 'NaN')"#), ("price >= 10", #"(b."price" >= $1 AND b."price" <> 'NaN')"#),
        ("price => 10", #"(b."price" >= $1 AND b."price" <> 'NaN')"#),
        ("10 < price", #"(b."price" > $1 AND b."price" <> 'NaN')"#), ("10 >= price", #"b."price" <= $1"#),
        ("title == nil", #"b."title" IS NULL"#), ("title == NULL", #"b."title" IS NULL"#), ("title != nil", #"b."title" IS NOT NULL"#),
        ("price < nil", "FALSE"), ("TRUEPREDICATE", "TRUE"), ("FALSEPREDICATE", "FALSE"), ("NOT TRUEPREDICATE", "FALSE"),
        ("title ==[c] 'dune'", #"lower(b."title") = lower($1)"#), ("title !=[c] 'dune'", #"lower(b."title") IS DISTINCT FROM lower($1)"#),
        ("title BEGINSWITH 'Du'", #"(b."title" LIKE $1 AND b."title" ~ $2)"#),
        ("title ENDSWITH[c] 'ne'", #"(b."title" ILIKE $1 AND b."title" ~* $2)"#),
        ("title CONTAINS 'un'", #"(b."title" LIKE $1 AND b."title" ~ $2)"#), ("title LIKE[c] 'D*n?'", #"b."title" ILIKE $1"#),
        ("price BETWEEN {1, 5}", #"b."price" BETWEEN $1 AND $2"#),
        ("pages IN {1, 2, 3}", #"b."pages" = ANY($1::int8[])"#),
        ("NOT pages IN {1, 2}", #"(b."pages" = ANY($1::int8[])) IS NOT TRUE"#),
        ("pages NOT IN {1, 2}", #"(b."pages" = ANY($1::int8[])) IS NOT TRUE"#),
        ("NOT title == 'x'", #"b."title" IS DISTINCT FROM $1"#),
        ("!(price > 3)", #"((b."price" > $1 AND b."price" <> 'NaN')) IS NOT TRUE"#),
        ("NOT title CONTAINS 'x'", #"((b."title" LIKE $1 AND b."title" ~ $2)) IS NOT TRUE"#),
        ("price > 1 AND price < 5 OR pages == 3", #"(((b."price" > $1 AND b."price" <> 'NaN') AND b."price" < $2) OR b."pages" = $3)"#),
        ("price > 1 && (price < 5 || pages == 3)", #"((b."price" > $1 AND b."price" <> 'NaN') AND (b."price" < $2 OR b."pages" = $3))"#),
        ("NOT (price > 1 AND title == 'x')", #"(((b."price" > $1 AND b."price" <> 'NaN')) IS NOT TRUE OR b."title" IS DISTINCT FROM $2)"#),
        ("publishedAt == nil", #"b."published_at" IS NULL"#), ("published_at != nil", #"b."published_at" IS NOT NULL"#),
        ("price > -2.5e1", #"(b."price" > $1 AND b."price" <> 'NaN')"#), ("pages > 3", #"b."pages" > $1"#),
        ("NOT title IN {nil, 'x'}", #"((b."title" = ANY($1::text[]) OR b."title" IS NULL)) IS NOT TRUE"#),
        ("title IN {nil}", #"(b."title" = ANY($1::text[]) OR b."title" IS NULL)"#),
        ("title <[c] 'M'", #"lower(b."title") < lower($1)"#),
        ("#title == 'x'", #"b."title" = $1"#),
    ])
    func operatorsAndModifiers(format: String, sql: String) throws {
        #expect(try render(format).sql == sql)
    }

    @Test func literalsAndPatternsAreBoundValues() throws {
        #expect(try render("title == \"Du\\\"ne\"").values == [.text("Du\"ne")])
        #expect(try render("price > -2.5e1").values == [.float8(-25)])
        #expect(try render("pages == 3").values == [.int8(3)])
        #expect(try render("title BEGINSWITH '50%_'").values.first == .text(#"50\%\_%"#))
        #expect(try render("title ENDSWITH 'ne'").values.first == .text("%ne"))
        #expect(try render("title CONTAINS 'u'").values.first == .text("%u%"))
        #expect(try render("title LIKE 'D*n?'").values == [.text("D%n_")])
        #expect(try render("title LIKE '50%*'").values == [.text(#"50\%%"#)])
        #expect(try render("price BETWEEN {1, 5.5}").values == [.int8(1), .float8(5.5)])
    }

    /// NaN compares as in Swift (IEEE 754): it equals nothing, not even itself, and orders with nothing; and a row
    /// holding NaN is not greater than a number, as PostgreSQL would have it.
    @Test func nanComparesAsInSwift() throws {
        let nan = Double.nan
        #expect(try render("price == %@", nan).sql == "FALSE")
        #expect(try render("price != %@", nan).sql == "TRUE")
        #expect(try render("NOT price == %@", nan).sql == "TRUE")
        #expect(try render("NOT price != %@", nan).sql == "FALSE")
        for op in ["<", "<=", ">", ">="] {
            #expect(try render("price \(op) %@", nan).sql == "FALSE", "\(op)")
            #expect(try render("NOT price \(op) %@", nan).sql == "TRUE", "\(op)")
            #expect(try render("price \(op) %@", Float.nan).sql == "FALSE", "\(op)")
        }
        #expect(try render("price BETWEEN %@", [1, nan]).sql == "FALSE")
        #expect(try render("NOT price BETWEEN %@", [nan, 1]).sql == "TRUE")
        let listed = try render("price IN %@", [nan, 1.5])
        #expect(listed.sql == #"b."price" = ANY($1::float8[])"#)
        guard case .array(let elements, _) = listed.values.first else { Issue.record("no array bound"); return }
        #expect(elements == [.float8(1.5)], "NaN is in no list")
        #expect(try render("price < %@", 2.0).sql == #"b."price" < $1"#, "NaN is not less than a number in PostgreSQL either")
        #expect(try render("price > %@", -Double.infinity).sql == #"(b."price" > $1 AND b."price" <> 'NaN')"#)
    }

    @Test func substitutions() throws {
        let id = UUID()
        #expect(try render("uuid == %@", id) == (#"b."uuid" = $1"#, [.uuid(id)]))
        #expect(try render("%K == %@", "title", "Dune") == (#"b."title" = $1"#, [.text("Dune")]))
        #expect(try render("pages == %d OR pages == %i OR pages == %lld", 1, Int32(2), Int64(3)).values == [.int8(1), .int4(2), .int8(3)])
        #expect(try render("price > %f", 2.5).values == [.float8(2.5)])
        #expect(try render("pages IN %@", [1, 2]).sql == #"b."pages" = ANY($1::int8[])"#)
        #expect(try render("pages BETWEEN %@", [1, 9]).values == [.int8(1), .int8(9)])
        #expect(try render("title == %@", String?.none).sql == #"b."title" IS NULL"#)
        #expect(try render("title ==[c] %@ AND price BETWEEN {%@, %@}", "x", 1.0, 2.0).values == [.text("x"), .float8(1), .float8(2)])
    }

    @Test(arguments: [
        ("title == ", "the predicate ends where a key or a value was expected", 9),
        ("title === 'x'", "expected a key or a value, found '='", 8),
        ("title == 'Dune", "the string that starts here is not closed", 9),
        ("title ~ 'x'", "unexpected character '~'", 6),
        (
            "title SOUNDSLIKE 'x'",
            "expected a comparison (==, !=, <, <=, >, >=, IN, BETWEEN, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES), found 'SOUNDSLIKE'",
            6
        ),
        ("(title == 'x'", "expected ')' to close the '(' , found the end", 13),
        ("title == 'x' price > 1", "expected AND, OR or the end of the predicate, found 'price'", 13),
        ("title == 'x'; DROP TABLE books", "unexpected character ';'", 12),
        ("title == %s", "unknown substitution; use %@, %K, %d, %i, %f or %lld", 9),
        ("title[x] == 'a'", "unknown modifier '[x]'; use [c], [d] or [cd]", 5),
        ("'a' == 'b'", "expected a key (a property name) on one side of '=='", 0),
        ("title == price", "comparing two keys is not supported; compare a key with a value", 9),
        ("price BETWEEN {1}", "BETWEEN needs two values, as in {1, 5}; found 1", 14),
        ("price IN 3", "IN needs a list, as in {1, 2} or an array argument", 9),
        ("title CONTAINS 3", "'CONTAINS' needs a string", 15),
        ("AND == 1", "expected a key or a value, found the keyword AND", 0),
    ])
    func malformedPredicatesPointAtTheProblem(format: String, message: String, position: Int) {
        let error = #expect(throws: StructPostgresError.self) { try render(format) }
        let caret = "\n  \(format)\n  \(String(repeating: " ", count: position))^"
        #expect(error?.message == "malformed predicate: \(message) (at character \(position + 1))\(caret)")
        #expect(error?.position == position + 1)
    }

    @Test func argumentsMustMatchThePlaceholders() {
        let tooFew = #expect(throws: StructPostgresError.self) { try render("title == %@ AND price > %@", "x") }
        #expect(tooFew?.message.hasPrefix("malformed predicate: placeholder %@ has no argument: 1 given (at character 25)") == true)
        let tooMany = #expect(throws: StructPostgresError.self) { try render("title == %@", "x", "y") }
        #expect(tooMany?.message.hasPrefix("malformed predicate: 2 arguments given for 1 placeholder") == true)
        let wrongKind = #expect(throws: StructPostgresError.self) { try render("pages == %d", "three") }
        #expect(wrongKind?.message.hasPrefix("malformed predicate: %d needs an integer, argument 1 is String") == true)
        let badKey = #expect(throws: StructPostgresError.self) { try render("%K == 1", 5) }
        #expect(badKey?.message.hasPrefix("malformed predicate: the argument for %K must be a key name (a String)") == true)
    }

    @Test func keysAndValueTypesAreChecked() throws {
        let unknown = #expect(throws: StructPostgresError.self) { try render("titel == 'x'") }
        #expect(unknown?.code == .undefinedColumn)
        #expect(unknown?.message == "unknown key 'titel' for Book: table 'books' has columns uuid, title, price, pages, published_at")
        let wrongType = #expect(throws: StructPostgresError.self) { try render("price > 'cheap'") }
        #expect(wrongType?.code == .invalidValue)
        #expect(wrongType?.message == "filter on 'price': a string cannot be compared with column 'price' (double precision)")
        let uuidText = UUID().uuidString
        let rendered = try render("uuid == %@", uuidText)
        #expect(rendered.sql == #"b."uuid" = $1::uuid"#)
        #expect(rendered.values == [.text(uuidText)])
        let notAUUID = #expect(throws: StructPostgresError.self) { try render("uuid == 'abc'") }
        #expect(notAUUID?.message == "filter on 'uuid': a string cannot be compared with column 'uuid' (uuid)")
        let uuidForInt = #expect(throws: StructPostgresError.self) { try render("pages == %@", UUID()) }
        #expect(uuidForInt?.message == "filter on 'pages': a UUID cannot be compared with column 'pages' (integer)")
        let intForText = #expect(throws: StructPostgresError.self) { try render("title < 5") }
        #expect(intForText?.message == "filter on 'title': an integer cannot be compared with column 'title' (text)")
        let likeOnNumber = #expect(throws: StructPostgresError.self) { try render("price BEGINSWITH '1'") }
        #expect(
            likeOnNumber?.message == "filter on 'price': beginsWith needs a text column and a string; column 'price' is double precision")
        let toManyWithoutAny = #expect(throws: StructPostgresError.self) { try render("books.title == 'x'") }
        #expect(
            toManyWithoutAny?.message == "unknown key path 'books.title': 'books' is not a relationship of Book; it has no relationships")
        let escapedKeyword = #expect(throws: StructPostgresError.self) { try render("#contains == 1") }
        #expect(escapedKeyword?.message.hasPrefix("unknown key 'contains' for Book") == true)
        let uuidOnText = try render("title == %@", UUID())
        #expect(uuidOnText.sql == #"b."title" = $1::text"#, "a UUID meets a text column as its text")
        let diacritics = #expect(throws: StructPostgresError.self) { try render("title ==[cd] 'x'") }
        #expect(diacritics?.message.contains("[d]") == true)
        for format in ["title IN[c] {'A', 'b'}", "NOT title IN[c] {'A'}", "title BETWEEN[c] {'a', 'b'}"] {
            let ignored = #expect(throws: StructPostgresError.self, "\(format)") { try render(format) }
            #expect(ignored?.message.contains("does not take [c] or [d]") == true, "\(format)")
        }
    }

    /// MATCHES anchors the whole pattern: one whose parentheses do not balance could escape the anchors
    /// (`x)|(.*` would match every row), so it is refused.
    @Test func aMatchesPatternWhoseParenthesesDoNotBalanceIsRefused() throws {
        for pattern in ["x)|(.*", "(a", "a)", "(a))(("] {
            let error = #expect(throws: StructPostgresError.self) { try render("title MATCHES %@", pattern) }
            #expect(error?.message.contains("parentheses do not balance") == true, "\(pattern)")
        }
        for pattern in ["(a|b)+", #"\)x\("#, "[()]", "[]()]", "[^]()]", "(a(b)c)"] {
            #expect(try render("title MATCHES %@", pattern).values == [.text("^(?:" + pattern + ")$")], "\(pattern)")
        }
    }

    @Test func deepPredicatesAreRefusedByNameNotByTheStack() throws {
        let nested = #expect(throws: StructPostgresError.self) {
            try render(String(repeating: "(", count: 5_000) + "title == 'x'" + String(repeating: ")", count: 5_000))
        }
        #expect(nested?.message.hasPrefix("malformed predicate: parentheses nest more than 256 levels deep") == true)
        let deepest = try render(String(repeating: "(", count: 256) + "title == 'x'" + String(repeating: ")", count: 256))
        #expect(deepest.sql == #"b."title" = $1"#)
        #expect(try render(String(repeating: "NOT ", count: 20_000) + "title == 'x'").sql == #"b."title" = $1"#)
        #expect(try render(String(repeating: "NOT ", count: 20_001) + "title == 'x'").sql == #"b."title" IS DISTINCT FROM $1"#)
        var built = Filter.equal("title", "x")
        for _ in 0..<5_000 { built = built && .constant(true) }
        let deepFilter = #expect(throws: StructPostgresError.self) { try render(built) }
        #expect(deepFilter?.code == .unsupportedPredicate)
        #expect(deepFilter?.message == "the filter nests more than 256 levels deep")
    }
}
