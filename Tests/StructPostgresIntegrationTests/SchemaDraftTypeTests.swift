import Foundation
import StructPostgres
import Testing

/// A model whose `init(from:)` refuses an empty name, as validating models do.
private struct Validated: StoredModel {
    static let table = "validated"
    var uuid: UUID
    var name: String

    enum CodingKeys: String, CodingKey { case uuid, name }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        uuid = try container.decode(UUID.self, forKey: .uuid)
        name = try container.decode(String.self, forKey: .name)
        guard !name.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .name, in: container, debugDescription: "a name is required")
        }
    }
}

private struct Measured: StoredModel {
    static let table = "measured"
    var uuid: UUID
    var count: Double
    var ratio: Float
    var day: Date
}

private struct Computed: StoredModel {
    static let table = "computed"
    static let uniqueKey = ["id"]
    var id: Int
    var price: Double
    var total: Double
}

/// Types in drafts and reports: arrays by their element, columns the server fills, what a column would round away.
@Suite struct SchemaDraftTypeTests {
    private static let uuid = PropertyShape(key: "uuid", kind: .uuid, optional: false)

    @Test func anArrayIsDraftedAsItsElementsTypeAndRoundTrips() async throws {
        let kinds = ValueKind.elements.map { ValueKind.array($0) }
        let shape = ModelShape(
            table: "arrays", properties: [Self.uuid] + kinds.enumerated().map { PropertyShape(key: "p\($0)", kind: $1, optional: false) })
        try await withTables { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let text = try await DraftHarness(service).draftAndApply(models)
                    for type in [
                        "bigint[]", "uuid[]", "double precision[]", "timestamptz[]", "boolean[]", "numeric[]", "bytea[]", "smallint[]",
                        "real[]",
                    ] {
                        #expect(text.contains(" \(type) NOT NULL"), "\(type): \(text)")
                    }
                    #expect(try await service.schemaReport(for: models).matches)
                    var random = SeededRandom(seed: 49)
                    let row = random.values(for: shape)
                    try await RoundTrip.write([row], of: models[0], service)
                    #expect(try await RoundTrip.read(models[0], service) == [row])
                })
        }
    }

    @Test(arguments: [
        ("integer[]", ValueKind.array(.string), "arrays of text"), ("text[]", .array(.int), "arrays of int8"),
        ("uuid[]", .array(.double), "arrays of float8"), ("boolean[]", .array(.int32), "arrays of int4"),
    ])
    func anArrayOfTheWrongElementTypeIsAMismatchAndItsWriteIsRefused(column: String, kind: ValueKind, says: String) async throws {
        let shape = ModelShape(table: "wrong_arrays", properties: [Self.uuid, PropertyShape(key: "values", kind: kind, optional: false)])
        try await withTables("CREATE TABLE wrong_arrays (uuid uuid PRIMARY KEY, values \(column) NOT NULL)") { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let report = try await service.schemaReport(for: models)
                    #expect(report.mismatches.map(\.kind) == [.typeMismatch], "\(report)")
                    #expect(report.mismatches.first?.message.contains(says) == true, "\(report)")
                    var random = SeededRandom(seed: 3)
                    let error = await #expect(throws: StructPostgresError.self) {
                        try await RoundTrip.write([random.values(for: shape)], of: models[0], service)
                    }
                    #expect(error?.code == .unsupportedType && error?.column == "values", "\(String(describing: error))")
                    #expect(try await rowCount("wrong_arrays", service) == 0)
                })
        }
    }

    @Test func arraysOfNeighbouringTypesStillMatch() async throws {
        let shape = ModelShape(
            table: "near_arrays",
            properties: [
                Self.uuid, PropertyShape(key: "ints", kind: .array(.int32), optional: false),
                PropertyShape(key: "names", kind: .array(.string), optional: false),
                PropertyShape(key: "ids", kind: .array(.uuid), optional: false),
            ])
        try await withTables(
            "CREATE TABLE near_arrays (uuid uuid PRIMARY KEY, ints bigint[] NOT NULL, names varchar(20)[] NOT NULL, ids uuid[] NOT NULL)"
        ) { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let report = try await service.schemaReport(for: models)
                    #expect(report.matches, "\(report)")
                })
        }
    }

    @Test func aWrittenPropertyOnAColumnTheServerAlwaysFillsIsAMismatchAndRefusedByName() async throws {
        let ddl =
            "CREATE TABLE computed (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, price double precision NOT NULL, total double precision GENERATED ALWAYS AS (price * 2) STORED)"
        try await withTables(ddl) { service, _ in
            let report = try await service.schemaReport(for: [Computed.self])
            #expect(report.mismatches.map(\.kind) == [.generatedColumn, .generatedColumn], "\(report)")
            #expect(report.mismatches.map(\.column) == ["id", "total"])
            #expect(report.mismatches[0].message.contains("GENERATED ALWAYS AS IDENTITY"))
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Computed(id: 1, price: 2, total: 4)])
            }
            #expect(error?.code == .unsupportedType && error?.column == "id", "\(String(describing: error))")
        }
        // Filled by default, not always: the model may write it.
        try await withTables(
            "CREATE TABLE computed (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, price double precision NOT NULL, total double precision NOT NULL DEFAULT 0)"
        ) { service, _ in
            #expect(try await service.schemaReport(for: [Computed.self]).matches)
            try await service.update(entities: [Computed(id: 1, price: 2, total: 4)])
        }
    }

    @Test func aFloatingPointPropertyOnAnIntegerColumnIsAMismatchAndAFractionIsRefused() async throws {
        try await withTables(
            "CREATE TABLE measured (uuid uuid PRIMARY KEY, count integer NOT NULL, ratio bigint NOT NULL, day date NOT NULL)"
        ) { service, _ in
            let report = try await service.schemaReport(for: [Measured.self])
            #expect(report.mismatches.map(\.kind) == [.typeMismatch, .typeMismatch], "\(report)")
            #expect(report.mismatches.map(\.property) == ["count", "ratio"])
            #expect(report.mismatches.first?.message.contains("would round to whole numbers") == true)
            let midnight = Date(timeIntervalSince1970: 86_400 * 20_000)
            let whole = Measured(uuid: UUID(), count: 2, ratio: 3, day: midnight.addingTimeInterval(3_600))
            try await service.update(entities: [whole])
            #expect(
                try await service.find(Measured.self, id: whole.uuid)?.day == midnight, "a date column keeps the day, in UTC (documented)")
            for bad in [
                Measured(uuid: UUID(), count: 1.5, ratio: 3, day: midnight), Measured(uuid: UUID(), count: 2, ratio: 0.25, day: midnight),
            ] {
                let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [whole, bad]) }
                #expect(error?.code == .invalidValue, "\(String(describing: error))")
                #expect(error?.message.contains("fractional part") == true, "\(String(describing: error))")
            }
            #expect(try await rowCount("measured", service) == 1, "nothing of a refused call was written")
        }
    }

    @Test func aDecimalWithAFractionIsRefusedByAnIntegerColumn() async throws {
        let shape = ModelShape(table: "amounts", properties: [Self.uuid, PropertyShape(key: "amount", kind: .decimal, optional: false)])
        try await withTables("CREATE TABLE amounts (uuid uuid PRIMARY KEY, amount bigint NOT NULL)") { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    try await RoundTrip.write([["uuid": .uuid(UUID()), "amount": .decimal(12)]], of: models[0], service)
                    let error = await #expect(throws: StructPostgresError.self) {
                        try await RoundTrip.write(
                            [["uuid": .uuid(UUID()), "amount": .decimal(Decimal(string: "12.5")!)]], of: models[0], service)
                    }
                    #expect(error?.code == .invalidValue && error?.column == "amount", "\(String(describing: error))")
                    #expect(try await rowCount("amounts", service) == 1)
                })
        }
    }

    @Test func anOptionalUniqueKeyIsDraftedSoThatTheDraftConverges() async throws {
        let shape = ModelShape(
            table: "coded", uniqueKey: ["code"],
            properties: [
                PropertyShape(key: "code", kind: .string, optional: true), PropertyShape(key: "label", kind: .string, optional: false),
            ])
        try await withTables { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let text = try await DraftHarness(service).draftAndApply(models)
                    #expect(text.contains(#"UNIQUE ("code")"#), "\(text)")
                    let report = try await service.schemaReport(for: models)
                    #expect(report.matches, "\(report)")
                    #expect(try await service.draftMigration(for: models).isEmpty)
                })
        }
    }

    @Test func aModelThatRefusesStandInValuesFailsTheDraftByName() async throws {
        try await withTables { service, _ in
            let error = await #expect(throws: StructPostgresError.self) { try await service.draftMigration(for: [Validated.self]) }
            #expect(error?.code == .schemaMismatch, "\(String(describing: error))")
            #expect(error?.message.contains("uninspectableModel: Validated") == true, "\(String(describing: error))")
            #expect(error?.message.contains("a name is required") == true)
        }
    }

    @Test func aDraftOfReviewLinesOnlyIsNoFile() async throws {
        try await withTables("CREATE TABLE measured (uuid uuid PRIMARY KEY, count text NOT NULL, ratio real NOT NULL, day date NOT NULL)") {
            service, _ in
            let draft = try await service.draftMigration(for: [Measured.self])
            #expect(!draft.isEmpty && draft.files.isEmpty, "\(draft.up)")
            #expect(draft.reviews.count == 1 && draft.reviews[0].hasPrefix("-- review: typeMismatch: Measured.count"), "\(draft.reviews)")
        }
    }
}
