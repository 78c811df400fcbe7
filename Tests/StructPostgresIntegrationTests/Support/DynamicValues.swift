import Foundation
import StructPostgres

/// A dynamic model seen through its values, whatever its tag and role.
protocol AnyDynamicModel: StoredModel {
    init(values: [String: DynamicValue])
    var values: [String: DynamicValue] { get }
}

extension DynamicModel: AnyDynamicModel {}

/// Writes and reads dynamic models by their values.
enum RoundTrip {
    static func write(_ rows: [[String: DynamicValue]], of type: any EntityConvertible.Type, _ service: PostgresService) async throws {
        guard let type = type as? any AnyDynamicModel.Type else { fatalError("\(type) is not a dynamic model") }
        try await writeRows(rows, type, service)
    }

    private static func writeRows<M: AnyDynamicModel>(_ rows: [[String: DynamicValue]], _ type: M.Type, _ service: PostgresService)
        async throws
    {
        try await service.update(entities: rows.map(M.init(values:)))
    }

    static func read(_ type: any EntityConvertible.Type, _ service: PostgresService) async throws -> [[String: DynamicValue]] {
        guard let type = type as? any AnyDynamicModel.Type else { fatalError("\(type) is not a dynamic model") }
        return try await readRows(type, service)
    }

    private static func readRows<M: AnyDynamicModel>(_ type: M.Type, _ service: PostgresService) async throws -> [[String: DynamicValue]] {
        try await service.fetch(M.self, loading: .none).map(\.values)
    }
}

/// A reproducible source of random values (SplitMix64): a failure names its seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }

    mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &self)! }

    /// A row of random values for every property of `shape` (nil for some optional ones).
    mutating func values(for shape: ModelShape) -> [String: DynamicValue] {
        var row: [String: DynamicValue] = [:]
        for property in shape.properties where !(property.optional && chance(0.25)) {
            row[property.key] = value(property.kind)
        }
        return row
    }

    /// A random value of `kind`, including the extremes, that PostgreSQL keeps exactly: strings composed (NFC)
    /// without NUL, dates at whole or half seconds.
    mutating func value(_ kind: ValueKind) -> DynamicValue {
        switch kind {
        case .string: .string(text())
        case .url:
            .url(URL(string: "https://example.com/\(Int.random(in: 0...9_999, using: &self))?q=\(Int.random(in: 0...9, using: &self))")!)
        case .role: .role(pick(StoredRole.allCases))
        case .int: .int(chance(0.2) ? pick([.min, .max, 0]) : Int.random(in: -1_000_000...1_000_000, using: &self))
        case .int8: .int8(Int8.random(in: .min ... .max, using: &self))
        case .int16: .int16(Int16.random(in: .min ... .max, using: &self))
        case .int32: .int32(Int32.random(in: .min ... .max, using: &self))
        case .int64: .int64(Int64.random(in: .min ... .max, using: &self))
        case .uint: .uint(UInt.random(in: .min ... .max, using: &self))
        case .uint8: .uint8(UInt8.random(in: .min ... .max, using: &self))
        case .uint16: .uint16(UInt16.random(in: .min ... .max, using: &self))
        case .uint32: .uint32(UInt32.random(in: .min ... .max, using: &self))
        case .uint64: .uint64(chance(0.2) ? .max : UInt64.random(in: .min ... .max, using: &self))
        case .double:
            .double(
                chance(0.2)
                    ? pick([-.greatestFiniteMagnitude, .leastNonzeroMagnitude, 0, -0.0]) : Double.random(in: -1e12...1e12, using: &self))
        case .float:
            .float(chance(0.2) ? pick([.greatestFiniteMagnitude, -.leastNonzeroMagnitude]) : Float.random(in: -1e6...1e6, using: &self))
        case .bool: .bool(chance(0.5))
        case .uuid: .uuid(UUID())
        case .date:
            .date(Date(timeIntervalSince1970: Double(Int.random(in: -2_000_000_000...4_000_000_000, using: &self)) + pick([0, 0.5, 0.25])))
        case .decimal: .decimal(decimal())
        case .data: .data(Data((0..<Int.random(in: 0...16, using: &self)).map { _ in UInt8.random(in: 0...255, using: &self) }))
        case .json: .json(JSONAddress(street: text(), number: Int.random(in: -5...500, using: &self)))
        case .array(let element): .array((0..<Int.random(in: 0...3, using: &self)).map { _ in value(element) })
        }
    }

    /// Up to 34 significant digits, up to 20 of them after the point.
    private mutating func decimal() -> Decimal {
        let digits = (0..<Int.random(in: 1...34, using: &self)).map { _ in String(Int.random(in: 0...9, using: &self)) }.joined()
        let places = Int.random(in: 0...min(20, digits.count), using: &self)
        let text = (chance(0.3) ? "-" : "") + digits.dropLast(places) + (places > 0 ? "." + digits.suffix(places) : "")
        return Decimal(string: text.hasPrefix("-.") || text.hasPrefix(".") ? text.replacingOccurrences(of: ".", with: "0.") : text)!
    }

    private mutating func text() -> String {
        let pieces = ["a", "Z", "é", "ß", "漢", "🚀", "👍🏽", "\"", "\\", ",", "{", "}", " ", "NULL", "'", "\t", "\n", "ø"]
        return (0..<Int.random(in: 0...8, using: &self)).map { _ in pick(pieces) }.joined().precomposedStringWithCanonicalMapping
    }
}
