import Foundation
import StructPostgresCore
import StructPostgresDriver

/// A property type whose values add up and average: the integers, `Double`, `Float`, `Decimal`, and their optionals.
/// Its ``Sum`` and ``Average`` are the types ``PostgresAccess/sum(_:of:where:)`` and
/// ``PostgresAccess/average(_:of:where:)`` return, chosen so that no figure is rounded or wrapped silently:
///
/// | Property | `Sum` | `Average` |
/// |---|---|---|
/// | `Int`, `Int8` ... `Int64`, `UInt8` ... `UInt32` | `Int`: PostgreSQL adds exactly (`numeric` for `bigint`); a total beyond `Int` fails with `invalidValue` | `Double`: PostgreSQL's exact `numeric` average, rounded once |
/// | `UInt`, `UInt64` (stored as `numeric`) | `Decimal`, exact | `Double` |
/// | `Double`, `Float` | `Double` (a `Float` column is added as `double precision`) | `Double` |
/// | `Decimal` | `Decimal`, exact; a total beyond 38 digits fails with `invalidValue` | `Decimal`, rounded to 38 digits |
///
/// ```swift
/// let total: Double? = try await db.sum(\BookEntity.price, of: BookModel.self)
/// ```
public protocol Summable: Sendable {
    /// The type of a sum of these values.
    associatedtype Sum: Decodable & Sendable
    /// The type of an average of these values.
    associatedtype Average: Decodable & Sendable
}

extension Int: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension Int8: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension Int16: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension Int32: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension Int64: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension UInt8: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension UInt16: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension UInt32: Summable {
    /// An `Int`.
    public typealias Sum = Int
    /// A `Double`.
    public typealias Average = Double
}
extension UInt64: Summable {
    /// A `Decimal`: the column is `numeric`, whose sums may pass `Int`'s range.
    public typealias Sum = Decimal
    /// A `Double`.
    public typealias Average = Double
}
extension UInt: Summable {
    /// A `Decimal`: the column is `numeric`, whose sums may pass `Int`'s range.
    public typealias Sum = Decimal
    /// A `Double`.
    public typealias Average = Double
}
extension Double: Summable {
    /// A `Double`.
    public typealias Sum = Double
    /// A `Double`.
    public typealias Average = Double
}
extension Float: Summable {
    /// A `Double`: the values are added as `double precision`.
    public typealias Sum = Double
    /// A `Double`.
    public typealias Average = Double
}
extension Decimal: Summable {
    /// A `Decimal`, exact.
    public typealias Sum = Decimal
    /// A `Decimal`, rounded to 38 significant digits.
    public typealias Average = Decimal
}
extension Optional: Summable where Wrapped: Summable {
    /// The sum of the values that are not nil.
    public typealias Sum = Wrapped.Sum
    /// The average of the values that are not nil.
    public typealias Average = Wrapped.Average
}
