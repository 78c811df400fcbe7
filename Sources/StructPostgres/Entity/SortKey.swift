import StructPostgresCore
import StructPostgresDriver

/// One ORDER BY term, Core Data's `NSSortDescriptor`. The key is a property name or column name.
///
/// ```swift
/// let users: [UserModel] = try await service.fetch(sortedBy: [.init("role"), .init("name", ascending: false)])
/// ```
public struct SortKey: Sendable, Equatable {
    /// Where NULLs go in the order: PostgreSQL's default, `NULLS FIRST` or `NULLS LAST`.
    public enum Nulls: Sendable, Equatable {
        /// PostgreSQL's default: NULL sorts as larger than any value.
        case `default`, first, last
    }

    /// The property name or column name to sort by.
    public var key: String
    /// Whether the order is ascending (`ASC`) rather than descending (`DESC`).
    public var ascending: Bool
    /// Where NULLs go in the order.
    public var nulls: Nulls
    /// Why the key path this key was made from names no column; thrown when the sort is used.
    private var invalidKeyPath: String?

    /// A sort by `key`, ascending unless told otherwise, with NULLs where PostgreSQL puts them unless told otherwise.
    public init(_ key: String, ascending: Bool = true, nulls: Nulls = .default) {
        self.key = key
        self.ascending = ascending
        self.nulls = nulls
    }

    init<Root, Value>(_ keyPath: KeyPath<Root, Value>, ascending: Bool, nulls: Nulls) {
        do {
            self.init(try KeyPathNames.name(of: keyPath), ascending: ascending, nulls: nulls)
        } catch {
            self.init("\(keyPath)", ascending: ascending, nulls: nulls)
            invalidKeyPath = error.message
        }
    }

    /// An ascending sort by `key`.
    public static func ascending(_ key: String) -> SortKey { SortKey(key) }
    /// A descending sort by `key`.
    public static func descending(_ key: String) -> SortKey { SortKey(key, ascending: false) }

    /// Whether the key was made from a key path that names a stored property (or from a name).
    var isValid: Bool { invalidKeyPath == nil }

    /// The ORDER BY term; `qualifier` (`"t."`) prefixes the column when the query joins tables.
    func sql(for description: EntityDescription, qualifier: String = "") throws -> String {
        if let invalidKeyPath { throw StructPostgresError(.undefinedColumn, invalidKeyPath, entity: description.entity) }
        var term = qualifier + SQLIdentifier.quote(try description.column(for: key)) + (ascending ? " ASC" : " DESC")
        switch nulls {
        case .default: break
        case .first: term += " NULLS FIRST"
        case .last: term += " NULLS LAST"
        }
        return term
    }
}
