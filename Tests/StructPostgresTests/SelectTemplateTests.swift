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
    var code: String
}

/// A fetch's text taken from the template of another fetch of its shape is the text built for it, with the same
/// values and types bound; fetches whose texts differ never share a shape. Without a server.
@Suite struct SelectTemplateTests {
    private static let description: EntityDescription = {
        let schema = TableSchema.fixture(
            "shelves",
            [
                ("uuid", "uuid", "uuid", "U"), ("title", "text", "text", "S"),
                ("price", "double precision", "float8", "N"), ("pages", "integer", "int4", "N"), ("code", "uuid", "uuid", "U"),
            ])
        return try! EntityDescription(Shelf.self, schema: schema)
    }()

    private static func shape(_ request: FetchRequest) -> SelectShape? {
        SelectShape(request, entity: ObjectIdentifier(Shelf.self), description: description)
    }

    private static func built(_ request: FetchRequest) throws -> Statement {
        try DatabaseSession.selectStatement(request, description, relationships: [:])
    }

    private static func template(_ request: FetchRequest) throws -> SelectTemplates.Template {
        let statement = try built(request)
        return .init(
            sql: statement.sql, preparedKey: .init(sql: statement.sql, types: statement.types), generation: description.schema.generation)
    }

    @Test func aPointQueryTakesItsTextFromTheTemplateOfAnother() throws {
        let (first, second) = (UUID(), UUID())
        let a = FetchRequest(filter: .equal("uuid", first), sort: [.ascending("title")], limit: 1)
        let b = FetchRequest(filter: .equal("uuid", second), sort: [.ascending("title")], limit: 1)
        let shapeB = try #require(Self.shape(b))
        #expect(Self.shape(a)?.shape == shapeB.shape)
        let statement = try #require(try shapeB.statement(try Self.template(a)))
        let expected = try Self.built(b)
        #expect(
            statement.sql
                == #"SELECT "uuid", "title", "price", "pages", "code" FROM "shelves" WHERE "shelves"."uuid" = $1 ORDER BY "title" ASC LIMIT 1"#
        )
        #expect(statement.sql == expected.sql)
        #expect(statement.values == [.uuid(second)])
        #expect(statement.types == expected.types)
        #expect(statement.preparedKey == PreparedStatementRegistry.Key(sql: expected.sql, types: expected.types))
    }

    @Test(arguments: [
        (Filter.equal("title", "x"), Filter.isNull("title")),
        (.equal("title", "x"), .equal("title", String?.none)),
        (.compare("price", .less, 1.0), .compare("price", .less, Double.nan)),
        (.equal("pages", 3), .equal("pages", Int32(3))),
        (.equal("pages", 3), .notEqual("pages", 3)),
        (.equal("pages", 3) && .equal("price", 1.0), .equal("pages", 3) || .equal("price", 1.0)),
        (.equal("pages", 3), !.equal("pages", 3)),
        (.equal("title", "x"), .compare("title", .equal, "x", options: .init(caseInsensitive: true))),
        (.equal("uuid", UUID()), .equal("code", UUID())),
        (.equal("code", UUID()), .equal("code", UUID().uuidString)),
        (.constant(true), .constant(false)),
    ])
    func fetchesWithDifferentTextsHaveDifferentShapes(a: Filter, b: Filter) throws {
        let (shapeA, shapeB) = (try #require(Self.shape(FetchRequest(filter: a))), try #require(Self.shape(FetchRequest(filter: b))))
        #expect(
            try Self.built(FetchRequest(filter: a)).sql != Self.built(FetchRequest(filter: b)).sql
                || shapeA.shape.wires != shapeB.shape.wires)
        #expect(shapeA.shape != shapeB.shape)
    }

    @Test func sortLimitAndOffsetArePartOfTheShape() throws {
        let filter = Filter.equal("pages", 3)
        let requests = [
            FetchRequest(filter: filter), FetchRequest(filter: filter, sort: [.ascending("price")]),
            FetchRequest(filter: filter, sort: [.descending("price")]),
            FetchRequest(filter: filter, sort: [SortKey("price", nulls: .first)]),
            FetchRequest(filter: filter, limit: 1), FetchRequest(filter: filter, limit: 2), FetchRequest(filter: filter, limit: 0),
            FetchRequest(filter: nil),
        ]
        let shapes = try requests.map { try #require(Self.shape($0)).shape }
        #expect(Set(shapes).count == requests.count)
        #expect(Self.shape(FetchRequest(filter: filter, offset: 20)) == nil, "each page's text is another: not kept")
    }

    @Test func aTemplateBuiltBeforeTheSchemaCacheWasForgottenIsNotKept() throws {
        let catalog = CatalogCache()
        let templates = SelectTemplates(catalog: catalog)
        let request = FetchRequest(filter: .equal("pages", 3))
        let shape = try #require(Self.shape(request)).shape
        var schema = Self.description.schema
        schema.generation = catalog.generation
        catalog.forget()
        let built = try Self.template(request)
        let old = SelectTemplates.Template(sql: built.sql, preparedKey: built.preparedKey, generation: schema.generation)
        templates.store(old, for: shape, builtFrom: schema)
        var current = schema
        current.generation = catalog.generation
        #expect(templates.template(for: shape, schema: current) == nil, "built from the layout read before the forget")
        // Stored before the forget, and still there when a fetch has read the new layout: not taken.
        let unguarded = SelectTemplates(catalog: CatalogCache())
        unguarded.store(old, for: shape, builtFrom: Self.description.schema)
        #expect(unguarded.template(for: shape, schema: current) == nil)
        #expect(unguarded.template(for: shape, schema: schema)?.sql == built.sql)
        let fresh = SelectTemplates.Template(sql: built.sql, preparedKey: built.preparedKey, generation: current.generation)
        templates.store(fresh, for: shape, builtFrom: current)
        #expect(templates.template(for: shape, schema: current)?.sql == (try Self.built(request)).sql)
        templates.forgetAll()
        #expect(templates.template(for: shape, schema: current) == nil)
    }

    @Test(arguments: [
        Filter.compare("title", .beginsWith, "Du"), .compare("title", .matches, "a+"), .in("pages", [1, 2]),
        .between("price", 1.0, 2.0), .equal("author.name", "x"), .equal("nonexistent", 1),
        .equal("pages", 3) && .compare("title", .contains, "x"),
    ])
    func fetchesWhoseTextDependsOnTheirValuesHaveNoShape(filter: Filter) {
        #expect(Self.shape(FetchRequest(filter: filter)) == nil)
    }

    @Test func aBadValueFailsFromTheTemplateAsWhenTheTextIsBuilt() throws {
        let good = FetchRequest(filter: .equal("code", UUID().uuidString))
        let bad = FetchRequest(filter: .equal("code", "not a uuid"))
        let shape = try #require(Self.shape(bad))
        #expect(Self.shape(good)?.shape == shape.shape)
        let built = #expect(throws: StructPostgresError.self) { try Self.built(bad) }
        let templated = #expect(throws: StructPostgresError.self) { try shape.statement(try Self.template(good)) }
        #expect(templated?.message == built?.message)
        #expect(templated?.message.contains("cannot be compared with column 'code'") == true)
    }

    /// 2,000 random filters, each with values changed at random: whenever the two share a shape, the text taken from
    /// the first's template is the second's, with its values and types (so fetches whose texts differ never share one).
    @Test func randomFiltersOfOneShapeShareTheirText() throws {
        var generator = SplitMix(seed: 0x5E1EC7)
        var (shared, compared) = (0, 0)
        for _ in 0..<2_000 {
            let skeleton = Skeleton.random(depth: 0, &generator)
            let sort: [SortKey] = Bool.random(using: &generator) ? [.descending("price")] : []
            let a = FetchRequest(
                filter: Filter(node: skeleton.node(&generator)), sort: sort, limit: Bool.random(using: &generator) ? 5 : nil)
            let b = FetchRequest(filter: Filter(node: skeleton.node(&generator)), sort: sort, limit: a.limit)
            guard let shapeA = Self.shape(a), let shapeB = Self.shape(b) else {
                Issue.record("a filter of comparisons has no shape")
                continue
            }
            compared += 1
            let (builtA, builtB) = (try Self.built(a), try Self.built(b))
            // Two shapes may still build one text (`price < nil` and `price < .nan` are both FALSE): kept twice, harmless.
            guard shapeA.shape == shapeB.shape else { continue }
            shared += 1
            let statement = try #require(try shapeB.statement(try Self.template(a)))
            #expect(statement.sql == builtB.sql)
            #expect(statement.values == builtB.values)
            #expect(statement.types == builtB.types)
        }
        #expect(compared == 2_000)
        #expect(shared > 500, "too few pairs shared a shape to say anything")
    }
}

/// A filter's structure, whose values are drawn anew each time it becomes a node.
private indirect enum Skeleton {
    case compare(String, Filter.Operator, caseInsensitive: Bool)
    case isNull(String, Bool)
    case constant(Bool)
    case all([Skeleton]), any([Skeleton])
    case not(Skeleton)

    static let keys = ["uuid", "title", "price", "pages", "code"]
    static let operators: [Filter.Operator] = [.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual]

    static func random(depth: Int, _ generator: inout SplitMix) -> Skeleton {
        switch Int.random(in: 0..<(depth < 3 ? 7 : 4), using: &generator) {
        case 0, 1:
            let key = keys.randomElement(using: &generator)!
            return .compare(
                key, operators.randomElement(using: &generator)!, caseInsensitive: key == "title" && Bool.random(using: &generator))
        case 2: return .isNull(keys.randomElement(using: &generator)!, Bool.random(using: &generator))
        case 3: return .constant(Bool.random(using: &generator))
        case 4: return .all((0..<Int.random(in: 1...3, using: &generator)).map { _ in random(depth: depth + 1, &generator) })
        case 5: return .any((0..<Int.random(in: 1...3, using: &generator)).map { _ in random(depth: depth + 1, &generator) })
        default: return .not(random(depth: depth + 1, &generator))
        }
    }

    func node(_ generator: inout SplitMix) -> Filter.Node {
        switch self {
        case .compare(let key, let op, let caseInsensitive):
            return .compare(key, op, Self.value(for: key, &generator), .init(caseInsensitive: caseInsensitive))
        case .isNull(let key, let isNull): return .isNull(key, isNull)
        case .constant(let value): return .constant(value)
        case .all(let inner): return .all(inner.map { $0.node(&generator) })
        case .any(let inner): return .any(inner.map { $0.node(&generator) })
        case .not(let inner): return .not(inner.node(&generator))
        }
    }

    /// A value for `key`: mostly of its column's type, sometimes nil, NaN or another type the column accepts.
    static func value(for key: String, _ generator: inout SplitMix) -> any Encodable & Sendable {
        if Int.random(in: 0..<8, using: &generator) == 0 { return String?.none }
        switch key {
        case "uuid", "code": return Bool.random(using: &generator) ? UUID() : UUID().uuidString
        case "title": return ["a", "Dune", "x y"].randomElement(using: &generator)!
        case "price": return Int.random(in: 0..<6, using: &generator) == 0 ? Double.nan : Double(Int.random(in: 0..<100, using: &generator))
        default:
            return Bool.random(using: &generator)
                ? Int32(Int.random(in: 0..<100, using: &generator)) : Int.random(in: 0..<100, using: &generator)
        }
    }
}
