import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Shelf: StoredModel {
    static let table = "shelves"
    var uuid: UUID
    var title: String?
    var price: Double
    var pages: Int32
    var weight: Float?
    var cost: Decimal?
    var code: UUID
    var label: String { title ?? "" }
}

/// The SQL of figures and groups, and what is refused before anything is sent. Without a server.
@Suite struct AggregateQueryTests {
    private static let description: EntityDescription = {
        let schema = TableSchema.fixture(
            "shelves",
            [
                ("uuid", "uuid", "uuid", "U"), ("title", "text", "text", "S"), ("price", "double precision", "float8", "N"),
                ("pages", "integer", "int4", "N"), ("weight", "real", "float4", "N"), ("cost", "numeric", "numeric", "N"),
                ("code", "uuid", "uuid", "U"),
            ])
        return try! EntityDescription(Shelf.self, schema: schema)
    }()

    private static func sql(_ query: AggregateQuery) throws -> Statement {
        try query.statement(description, relationships: [:])
    }

    @Test func figuresFollowTheirColumns() throws {
        var query = AggregateQuery(filter: nil)
        query.aggregates = [
            Aggregate<Shelf, Int>.count.spec, Aggregate<Shelf, Int>.count(\.title).spec, Aggregate<Shelf, Int>.sum(\.pages).spec,
            Aggregate<Shelf, Int>.sum(\.weight).spec, Aggregate<Shelf, Int>.average(\.price).spec,
            Aggregate<Shelf, Int>.average(\.cost).spec,
            Aggregate<Shelf, Int>.min(\.title).spec, Aggregate<Shelf, Int>.max(\.cost).spec,
        ]
        let statement = try Self.sql(query)
        #expect(
            statement.sql == """
                SELECT count(*) AS "count", count("shelves"."title") AS "countTitle", sum("shelves"."pages") AS "sumPages", \
                sum("shelves"."weight"::float8) AS "sumWeight", (sum("shelves"."price"::float8) / nullif(count("shelves"."price"), 0)) AS "averagePrice", \
                avg("shelves"."cost") AS "averageCost", min("shelves"."title") AS "minTitle", max("shelves"."cost") AS "maxCost" FROM "shelves"
                """)
    }

    @Test func aGroupedQueryGroupsFiltersSortsAndLimits() throws {
        var query = AggregateQuery(
            filter: Filter.compare("price", .greater, 1.0), keys: [.success("title"), .success("pages")], grouped: true)
        query.add(
            Aggregate<Shelf, Int>.count, Aggregate<Shelf, Int>.average(\.price).named("mean"),
            having: .count > 2 && !(Aggregate<Shelf, Int>.average(\.price) < 5.0),
            sort: [.descending(Aggregate<Shelf, Int>.count), .ascending(\.title, nulls: .first)], limit: 10)
        let statement = try Self.sql(query)
        #expect(
            statement.sql == """
                SELECT "shelves"."title" AS "title", "shelves"."pages" AS "pages", count(*) AS "count", \
                (sum("shelves"."price"::float8) / nullif(count("shelves"."price"), 0)) AS "mean" FROM "shelves" \
                WHERE ("shelves"."price" > $1 AND "shelves"."price" <> 'NaN') GROUP BY "shelves"."title", "shelves"."pages" \
                HAVING (count(*) > $2 AND ((sum("shelves"."price"::float8) / nullif(count("shelves"."price"), 0)) < $3) IS NOT TRUE) \
                ORDER BY count(*) DESC, "shelves"."title" ASC NULLS FIRST LIMIT 10
                """)
        #expect(statement.values == [.float8(1), .int8(2), .float8(5)])
    }

    @Test func whatCannotRunIsRefusedByNameBeforeTheCatalogIsRead() throws {
        func refusal(_ query: AggregateQuery) -> StructPostgresError? { query.refusal(entity: "Shelf", table: "shelves") }
        var computed = AggregateQuery(filter: nil)
        computed.aggregates = [Aggregate<Shelf, Int>.sum(\.pages).spec, Aggregate<Shelf, Int>.max(\.label).spec]
        #expect(refusal(computed)?.code == .undefinedColumn)
        #expect(refusal(computed)?.message.hasPrefix("max: the key path reads a computed property of Shelf") == true)
        var having = AggregateQuery(filter: nil, grouped: true)
        having.add(Aggregate<Shelf, Int>.count, having: .count > 1, sort: [], limit: nil)
        #expect(refusal(having)?.message.hasPrefix("having: a group filter needs a grouping") == true)
        var sorted = AggregateQuery(filter: nil, keys: [.success("title")], grouped: true)
        sorted.add(Aggregate<Shelf, Int>.count, having: nil, sort: [.ascending(\.pages)], limit: nil)
        #expect(
            refusal(sorted)?.message
                == "sortedBy: 'pages' is not a key the query groups by (it groups by title); sort by a grouping key or a figure")
        var limited = AggregateQuery(filter: nil, keys: [.success("title")], grouped: true, limit: -1)
        limited.aggregates = [Aggregate<Shelf, Int>.count.spec]
        #expect(refusal(limited)?.message == "limit -1 is negative")
        var named = AggregateQuery(filter: nil, keys: [.success("title")], grouped: true, byName: true)
        named.aggregates = [Aggregate<Shelf, Int>.count.spec, Aggregate<Shelf, Int>.count(\.pages).named("count").spec]
        #expect(refusal(named)?.message.contains("two results of the grouped query are named 'count'") == true)
        named.byName = false
        #expect(refusal(named) == nil)
    }

    @Test func aColumnAFigureCannotTakeIsRefusedByName() throws {
        for (spec, reason) in [
            (Aggregate<Shelf, Int>.min(\.code).spec, "min(code): column 'code' is uuid, which has no order min can use")
        ] {
            var query = AggregateQuery(filter: nil)
            query.aggregates = [spec]
            let error = #expect(throws: StructPostgresError.self) { try Self.sql(query) }
            #expect(error?.message == reason)
            #expect(error?.column == "code" && error?.table == "shelves")
        }
        var text = AggregateQuery(filter: nil)
        text.aggregates = [AggregateSpec(function: .sum, key: .success("title"), name: { _ in "x" })]
        let error = #expect(throws: StructPostgresError.self) { try Self.sql(text) }
        #expect(
            error?.message
                == "sum(title): column 'title' is text, not a number (smallint, integer, bigint, numeric, real or double precision)")
    }

    @Test func aDecimalAverageIsRoundedToThirtyEightDigits() {
        #expect(
            AggregateRows.rounded("0.33333333333333333333333333333333333333333", significantDigits: 38) == "0."
                + String(repeating: "3", count: 38))
        #expect(
            AggregateRows.rounded("-2.666666666666666666666666666666666666666", significantDigits: 38) == "-2."
                + String(repeating: "6", count: 36) + "7")
        #expect(
            AggregateRows.rounded("9.999999999999999999999999999999999999999", significantDigits: 38) == "10."
                + String(repeating: "0", count: 37))
        #expect(
            AggregateRows.rounded("0.000123456789012345678901234567890123456789", significantDigits: 38)
                == "0.00012345678901234567890123456789012345679")
        #expect(AggregateRows.rounded("12.5", significantDigits: 38) == "12.5")
        #expect(AggregateRows.rounded(String(repeating: "9", count: 39), significantDigits: 38) == nil)
    }
}
