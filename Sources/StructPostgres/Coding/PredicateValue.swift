import StructPostgresCore
import StructPostgresDriver

/// A value captured by a `Predicate` (which is `Sendable`, so its values are), encoded as the value itself: the
/// encoder sees its own type (a `Date`, a `UUID`, an enum's raw value).
struct PredicateValue: Encodable, @unchecked Sendable {
    let value: any Encodable

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
