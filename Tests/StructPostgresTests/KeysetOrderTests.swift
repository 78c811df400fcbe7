import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Ledger: StoredModel {
    static let table = "ledger"
    var uuid: UUID
    var rank: Int32
    var bucket: Int32?
    var title: String?
    var total: Int32 { rank + (bucket ?? 0) }
}

/// The order and the "comes after" condition of pages, without a server: the unique key breaks ties in the sort's
/// direction, NULLs go where the order puts them, and a sort of NOT NULL columns in one direction is one row
/// comparison.
@Suite struct KeysetOrderTests {
    private static let description: EntityDescription = {
        var schema = TableSchema.fixture(
            "ledger",
            [
                ("uuid", "uuid", "uuid", "U"), ("rank", "integer", "int4", "N"), ("bucket", "integer", "int4", "N"),
                ("title", "text", "text", "S"),
            ])
        var columns = schema.columns
        columns["uuid"]!.notNull = true
        columns["rank"]!.notNull = true
        schema = TableSchema(
            table: schema.table, quotedTable: schema.quotedTable, columns: columns, columnOrder: schema.columnOrder,
            uniqueKeys: schema.uniqueKeys)
        return try! EntityDescription(Ledger.self, schema: schema)
    }()

    private static func cell(_ value: Int32) -> PagePosition.Cell {
        PagePosition.Cell(dataType: 23, binary: true, bytes: withUnsafeBytes(of: value.bigEndian) { Array($0) })
    }

    private static let uuidCell = PagePosition.Cell(dataType: 2950, binary: true, bytes: Array(repeating: 7, count: 16))
    private static let null = PagePosition.Cell(dataType: 0, binary: true, bytes: nil)

    @Test func theUniqueKeyBreaksTiesInTheDirectionOfTheLastSortKey() throws {
        let ascending = try KeysetOrder([.ascending("rank")], Self.description)
        #expect(ascending.terms.map(\.column) == ["rank", "uuid"])
        #expect(ascending.orderBy(qualifier: "\"ledger\"") == #""ledger"."rank" ASC NULLS LAST, "ledger"."uuid" ASC NULLS LAST"#)
        let descending = try KeysetOrder([.descending("rank")], Self.description)
        #expect(descending.terms.map(\.ascending) == [false, false])
        #expect(descending.orderBy(qualifier: "t") == #"t."rank" DESC NULLS FIRST, t."uuid" DESC NULLS FIRST"#)
        // The key sorted already is not added again; a column sorted twice counts once.
        let byKey = try KeysetOrder([.descending("uuid"), .ascending("rank"), .descending("uuid")], Self.description)
        #expect(byKey.terms.map(\.column) == ["uuid", "rank"])
        #expect(try KeysetOrder([], Self.description).terms.map(\.column) == ["uuid"])
    }

    @Test func notNullColumnsInOneDirectionCompareAsOneRow() throws {
        let order = try KeysetOrder([.descending("rank")], Self.description)
        var statement = Statement(sql: "")
        #expect(
            order.segments(after: [Self.cell(5), Self.uuidCell], qualifier: "t", into: &statement) == [#"(t."rank", t."uuid") < ($1, $2)"#])
        #expect(statement.types.map(\.rawValue) == [23, 2950])
    }

    @Test func aNullableFirstColumnsNullsAreASegmentOfTheirOwn() throws {
        let bucket = try KeysetOrder([.ascending("bucket")], Self.description)
        var statement = Statement(sql: "")
        #expect(
            bucket.segments(after: [Self.cell(3), Self.uuidCell], qualifier: "t", into: &statement)
                == [#"(t."bucket", t."uuid") > ($1, $2)"#, #"t."bucket" IS NULL"#])
        let order = try KeysetOrder([.ascending("bucket"), .descending("rank")], Self.description)
        var first = Statement(sql: "")
        #expect(
            order.segments(after: [Self.cell(3), Self.cell(5), Self.uuidCell], qualifier: "t", into: &first) == [
                #"t."bucket" >= $1 AND (t."bucket" > $1 OR ((t."rank" < $2) OR (t."rank" = $2 AND t."uuid" < $3)))"#,
                #"t."bucket" IS NULL"#,
            ])
        // After a NULL sorted last only NULLs remain, ordered by the later columns.
        var second = Statement(sql: "")
        #expect(
            order.segments(after: [Self.null, Self.cell(5), Self.uuidCell], qualifier: "t", into: &second)
                == [#"t."bucket" IS NULL AND ((t."rank" < $1) OR (t."rank" = $1 AND t."uuid" < $2))"#])
        #expect(second.types.count == 2)
        // NULLs first: after a NULL come the other NULLs, then every value.
        let nullsFirst = try KeysetOrder([SortKey("bucket", nulls: .first)], Self.description)
        var third = Statement(sql: "")
        #expect(
            nullsFirst.segments(after: [Self.null, Self.uuidCell], qualifier: "t", into: &third)
                == [#"t."bucket" IS NULL AND ((t."uuid" > $1))"#, #"t."bucket" IS NOT NULL"#])
        var fourth = Statement(sql: "")
        #expect(
            nullsFirst.segments(after: [Self.cell(2), Self.uuidCell], qualifier: "t", into: &fourth) == [
                #"(t."bucket", t."uuid") > ($1, $2)"#
            ])
    }

    @Test func mixedDirectionsAreBoundedByTheFirstColumn() throws {
        let order = try KeysetOrder([.ascending("rank"), .descending("title")], Self.description)
        var statement = Statement(sql: "")
        #expect(
            order.segments(after: [Self.cell(1), Self.null, Self.uuidCell], qualifier: "t", into: &statement) == [
                #"t."rank" >= $1 AND (t."rank" > $1 OR ((t."title" IS NOT NULL) OR (t."title" IS NULL AND t."uuid" < $2)))"#
            ])
    }

    @Test func theDigestTellsOrdersApartAndAKeyPathNamingNoColumnIsRefused() throws {
        let a = try KeysetOrder([.ascending("rank")], Self.description)
        #expect(try KeysetOrder([.ascending(\Ledger.rank)], Self.description).digest == a.digest)
        #expect(try KeysetOrder([.descending("rank")], Self.description).digest != a.digest)
        #expect(try KeysetOrder([SortKey("rank", nulls: .first)], Self.description).digest != a.digest)
        #expect(try KeysetOrder([.ascending("title")], Self.description).digest != a.digest)
        let error = #expect(throws: StructPostgresError.self) { try KeysetOrder([.ascending(\Ledger.total)], Self.description) }
        #expect(error?.code == .undefinedColumn)
        let unknown = #expect(throws: StructPostgresError.self) { try KeysetOrder([.ascending("price")], Self.description) }
        #expect(unknown?.message.contains("unknown key 'price'") == true)
    }
}
