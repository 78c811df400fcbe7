import Foundation
import StructPostgres
import Synchronization

/// Model types made at run time, for tests that draft, migrate and round-trip models nobody wrote by hand.
///
/// Swift makes no type at run time, but it instantiates generics: `Next<Next<Origin>>` is a type of its own, so
/// `DynamicModel<Next<Origin>, RoleA>` is distinct from every other model the process has seen (the library keeps
/// what it learns per type). Each such type reads its table, key, properties and relationships from a shape
/// registered for it before first use.
protocol TypeTag: Sendable {}
enum Origin: TypeTag {}
enum Next<Previous: TypeTag>: TypeTag {}

/// Which model of a graph: the relationships' slots are typed by role.
protocol ModelRole: Sendable {}
enum RoleA: ModelRole {}
enum RoleB: ModelRole {}

/// What a test needs to do with a fresh type: a generic function, since closures cannot be generic.
protocol WithFreshTag {
    associatedtype Result
    func run<Tag: TypeTag>(_ tag: Tag.Type) async throws -> Result
}

/// Calls `body` with a tag type used by no earlier call (`depth` distinct tags deep).
func withFreshTag<Body: WithFreshTag>(_ depth: Int, _ body: Body) async throws -> Body.Result {
    try await withTag(depth, Origin.self, body)
}

private func withTag<Tag: TypeTag, Body: WithFreshTag>(_ depth: Int, _ tag: Tag.Type, _ body: Body) async throws -> Body.Result {
    depth == 0 ? try await body.run(tag) : try await withTag(depth - 1, Next<Tag>.self, body)
}

/// The kinds of value a dynamic property holds: every scalar type the library stores, arrays of them, and JSON.
enum ValueKind: Hashable, Sendable, CustomStringConvertible {
    case string, url, role, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64
    case double, float, bool, uuid, date, decimal, data, json
    indirect case array(ValueKind)

    static let scalars: [ValueKind] = [
        .string, .url, .role, .int, .int8, .int16, .int32, .int64, .uint, .uint8, .uint16, .uint32, .uint64,
        .double, .float, .bool, .uuid, .date, .decimal, .data,
    ]
    /// The kinds an array can hold (every scalar but raw-value enums, which travel as JSON in an array).
    static let elements: [ValueKind] = scalars.filter { $0 != .role }

    var description: String {
        switch self {
        case .string: "String"
        case .url: "URL"
        case .role: "Role"
        case .int: "Int"
        case .int8: "Int8"
        case .int16: "Int16"
        case .int32: "Int32"
        case .int64: "Int64"
        case .uint: "UInt"
        case .uint8: "UInt8"
        case .uint16: "UInt16"
        case .uint32: "UInt32"
        case .uint64: "UInt64"
        case .double: "Double"
        case .float: "Float"
        case .bool: "Bool"
        case .uuid: "UUID"
        case .date: "Date"
        case .decimal: "Decimal"
        case .data: "Data"
        case .json: "Address"
        case .array(let element): "[\(element)]"
        }
    }

    /// The kind a Swift type's name in the docs stands for: `Int`, `[UUID]`, `JSONAddress` (a Codable struct).
    init?(swiftName: String) {
        if swiftName.hasPrefix("["), swiftName.hasSuffix("]") {
            guard let element = ValueKind(swiftName: String(swiftName.dropFirst().dropLast())) else { return nil }
            self = .array(element)
            return
        }
        guard let kind = (Self.scalars + [.json]).first(where: { $0.description == swiftName }) else { return nil }
        self = kind
    }
}

/// A raw-value enum, stored as its raw value.
enum StoredRole: String, Codable, Sendable, CaseIterable {
    case reader, critic, editor
}

/// Any other Codable value, stored as jsonb.
struct JSONAddress: Codable, Sendable, Hashable {
    var street: String
    var number: Int
}

/// One value of a dynamic property.
enum DynamicValue: Hashable, Sendable {
    case string(String), url(URL), role(StoredRole), int(Int), int8(Int8), int16(Int16), int32(Int32), int64(Int64)
    case uint(UInt), uint8(UInt8), uint16(UInt16), uint32(UInt32), uint64(UInt64)
    case double(Double), float(Float), bool(Bool), uuid(UUID), date(Date), decimal(Decimal), data(Data), json(JSONAddress)
    case array([DynamicValue])
}

/// A property of a dynamic model.
struct PropertyShape: Sendable {
    let key: String
    let kind: ValueKind
    let optional: Bool
}

/// A relationship of a dynamic model, to a model of `target`'s role in the same graph.
enum RelationshipShape: Sendable {
    /// Through the source's `<name>ID` property.
    case toOne(name: String, target: any ModelRole.Type)
    /// The target's property `column` references the source.
    case backReference(name: String, target: any ModelRole.Type, column: String)
    /// A join table.
    case through(name: String, target: any ModelRole.Type, table: String)
}

/// A dynamic model's table, key, properties and relationships.
struct ModelShape: Sendable {
    var table: String
    var uniqueKey: [String] = ["uuid"]
    var properties: [PropertyShape]
    var relationships: [RelationshipShape] = []
}

private let shapes = Mutex<[ObjectIdentifier: ModelShape]>([:])

/// A model whose table, key, properties and relationships are its registered ``ModelShape``.
struct DynamicModel<Tag: TypeTag, Part: ModelRole>: StoredModel, Hashable {
    static var shape: ModelShape {
        guard let shape = shapes.withLock({ $0[ObjectIdentifier(Self.self)] }) else { fatalError("no shape registered for \(Self.self)") }
        return shape
    }

    static func register(_ shape: ModelShape) { shapes.withLock { $0[ObjectIdentifier(Self.self)] = shape } }

    static var table: String { shape.table }
    static var uniqueKey: [String] { shape.uniqueKey }

    static var relationships: [Relationship<Self>] {
        shape.relationships.map { relationship in
            switch relationship {
            case .toOne(let name, let target):
                target == RoleA.self ? .toOne(name, \.$oneA) : .toOne(name, \.$oneB)
            case .backReference(let name, let target, let column):
                target == RoleA.self ? .toMany(name, \.$manyA, backReference: column) : .toMany(name, \.$manyB, backReference: column)
            case .through(let name, let target, let table):
                target == RoleA.self ? .toMany(name, \.$manyA, through: table) : .toMany(name, \.$manyB, through: table)
            }
        }
    }

    var values: [String: DynamicValue]
    @Related var oneA: DynamicModel<Tag, RoleA>?
    @Related var oneB: DynamicModel<Tag, RoleB>?
    @Related var manyA: [DynamicModel<Tag, RoleA>]
    @Related var manyB: [DynamicModel<Tag, RoleB>]

    init(values: [String: DynamicValue]) {
        self.values = values
    }

    static func == (a: Self, b: Self) -> Bool { a.values == b.values }
    func hash(into hasher: inout Hasher) { hasher.combine(values) }

    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [String: DynamicValue] = [:]
        for property in Self.shape.properties {
            let key = Key(stringValue: property.key)
            if property.optional {
                values[property.key] = try Self.decodeIfPresent(property.kind, container, key)
            } else {
                values[property.key] = try Self.decode(property.kind, container, key)
            }
        }
        self.values = values
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for property in Self.shape.properties {
            let key = Key(stringValue: property.key)
            if let value = values[property.key] {
                try Self.encode(value, &container, key)
            } else {
                // As synthesized conformances do: `encodeIfPresent` of the nil.
                try container.encodeIfPresent(String?.none, forKey: key)
            }
        }
    }
}
