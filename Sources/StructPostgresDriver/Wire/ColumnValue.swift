import Foundation
import StructPostgresCore

/// The PostgreSQL type a value travels as.
package enum WireType: String, Hashable, Sendable {
    case uuid, text, bool, int2, int4, int8, float4, float8, numeric, timestamptz, bytea, jsonb

    /// The SQL name used in casts such as `$1::int8[]`.
    package var sqlName: String { rawValue }
}

/// One value of one column, ready to be bound.
package enum ColumnValue: Hashable, Sendable {
    case null
    case uuid(UUID)
    case text(String)
    case bool(Bool)
    case int2(Int16)
    case int4(Int32)
    case int8(Int64)
    case float4(Float)
    case float8(Double)
    case numeric(Decimal)
    case timestamptz(Date)
    case bytea(Data)
    /// JSON text, stored as `jsonb`.
    case jsonb(String)
    /// A one-dimensional array, sent as its text literal (`{"a","b",NULL}`).
    case array([ColumnValue], element: WireType?)

    /// The wire type; `nil` for null. Arrays travel as text literals.
    package var wireType: WireType? {
        switch self {
        case .null: nil
        case .uuid: .uuid
        case .text, .array: .text
        case .bool: .bool
        case .int2: .int2
        case .int4: .int4
        case .int8: .int8
        case .float4: .float4
        case .float8: .float8
        case .numeric: .numeric
        case .timestamptz: .timestamptz
        case .bytea: .bytea
        case .jsonb: .jsonb
        }
    }

    /// Why PostgreSQL cannot hold this value, if it cannot (checked before encoding, which would trap).
    package var encodingProblem: String? {
        switch self {
        case .numeric(let decimal) where decimal.isNaN:
            return "Decimal.nan cannot be stored"
        case .timestamptz(let date) where !TimestampCoding.isRepresentable(date):
            return "the date is outside PostgreSQL's timestamp range (4713 BC to 294276 AD)"
        case .array(let elements, _):
            return elements.lazy.compactMap(\.encodingProblem).first
        default:
            return nil
        }
    }

    package var isArray: Bool {
        if case .array = self { return true }
        return false
    }

    /// Whether the value is a floating-point NaN, which compares with nothing (IEEE 754, as Swift).
    package var isNaN: Bool {
        switch self {
        case .float8(let double): double.isNaN
        case .float4(let float): float.isNaN
        default: false
        }
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short rendering for keys in error messages (never used for non-key values).
    package var keyDescription: String {
        switch self {
        case .null: "NULL"
        case .uuid(let v): v.uuidString
        case .text(let v): "'\(v)'"
        case .bool(let v): "\(v)"
        case .int2(let v): "\(v)"
        case .int4(let v): "\(v)"
        case .int8(let v): "\(v)"
        case .float4(let v): "\(v)"
        case .float8(let v): "\(v)"
        case .numeric(let v): "\(v)"
        case .timestamptz(let v): ISO8601DateFormatter().string(from: v)
        case .bytea(let v): "\\x" + v.map { String(format: "%02x", $0) }.joined()
        case .jsonb(let v): v
        case .array(let values, _): "{" + values.map(\.keyDescription).joined(separator: ",") + "}"
        }
    }
}
