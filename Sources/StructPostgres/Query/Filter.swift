import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Which rows a fetch, count or delete applies to: Core Data's `NSPredicate`. Keys are property names
/// or column names; values are always bound parameters.
///
/// ```swift
/// let reviews: [ReviewModel] = try await service.fetch(where: .equal("bookID", book.uuid))
/// let admins = try await service.count(UserModel.self, where: .equal("role", Role.admin) && .isNull("invitedByID"))
/// let ported = try Filter(format: "bookId == %@ AND createdAt > %@", book.uuid, since)
/// ```
public struct Filter: Sendable {
    /// How deep parentheses (in a format string) and nested conditions (in SQL) may go: deeper ones are refused.
    static let maximumDepth = 256

    indirect enum Node: Sendable {
        case compare(String, Operator, any Encodable & Sendable, Options)
        case between(String, any Encodable & Sendable, any Encodable & Sendable)
        case isNull(String, Bool)
        case among(String, [any Encodable & Sendable])
        case constant(Bool)
        /// `ANY` / `ALL` / `NONE` over the to-many relationship the inner key path goes through.
        case quantified(Quantifier, Node)
        case all([Node])
        case any([Node])
        case not(Node)
        /// A filter that cannot be compiled, such as a typed filter on a key path that is not a stored property.
        case invalid(StructPostgresError)
    }

    /// A comparison of a key with a value.
    public enum Operator: String, Sendable {
        /// `==`, `!=`, `<`, `<=`, `>`, `>=`.
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
        /// String operators; `like` takes NSPredicate's wildcards `*` and `?`. `beginsWith`, `endsWith` and `contains`
        /// match whole Characters, as Swift's `String` does; `like` and `matches` match code points.
        case beginsWith, endsWith, contains, like
        /// A regular expression that the whole string matches, as NSPredicate's `MATCHES` (PostgreSQL's `~`
        /// with the pattern anchored at both ends; its syntax is POSIX with Perl's extensions, close to ICU's).
        case matches

        var isStringOperator: Bool {
            switch self {
            case .beginsWith, .endsWith, .contains, .like, .matches: true
            case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual: false
            }
        }
    }

    /// How a to-many key path is quantified: `ANY books.price > 10`.
    public enum Quantifier: Sendable {
        /// `ANY`, `ALL` or `NONE` of the related rows.
        case any, all, none
    }

    /// NSPredicate's `[c]` and `[d]` modifiers.
    public struct Options: Sendable, Equatable {
        /// NSPredicate's `[c]`: compare ignoring case (text columns only).
        public var caseInsensitive = false
        /// NSPredicate's `[d]`: not supported; a filter with it fails, as PostgreSQL needs the `unaccent` extension.
        public var diacriticInsensitive = false
        /// Options with the given modifiers; both off by default.
        public init(caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) {
            self.caseInsensitive = caseInsensitive
            self.diacriticInsensitive = diacriticInsensitive
        }
    }

    let node: Node

    init(node: Node) { self.node = node }

    /// A filter from an NSPredicate format string, for ported code: `==`, `!=`, `<`, `<=`, `>`, `>=`, `IN`,
    /// `BETWEEN`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES` (with `[c]`), `AND`, `OR`, `NOT`,
    /// parentheses, `nil`, `TRUEPREDICATE`, `FALSEPREDICATE`, key paths through to-one relationships
    /// (`author.name`), `ANY`/`ALL`/`NONE` over to-many ones, `@count` of a to-many relationship or an array
    /// (`reviews.@count > 2`), and the substitutions `%@ %K %d %i %f %lld`.
    ///
    /// ```swift
    /// let filter = try Filter(format: "bookId == %@ AND content CONTAINS[c] %@", book.uuid, "great")
    /// ```
    /// - Throws: ``StructPostgresError`` with a caret under the position of a malformed part, or when
    ///   arguments and placeholders do not match in number or type.
    public init(format: String, _ arguments: (any Encodable & Sendable)?...) throws {
        try self.init(format: format, arguments: arguments)
    }

    /// A filter from an NSPredicate format string and an array of arguments.
    public init(format: String, arguments: [(any Encodable & Sendable)?]) throws {
        var parser = try PredicateParser(format: format, arguments: arguments)
        node = try parser.parse()
    }

    /// Rows whose `key` equals `value`; `nil` matches rows where it is NULL.
    public static func equal(_ key: String, _ value: some Encodable & Sendable) -> Filter {
        Filter(node: .compare(key, .equal, value, Options()))
    }

    /// Rows whose `key` differs from `value`, NULL included (as NSPredicate's `!=` does).
    public static func notEqual(_ key: String, _ value: some Encodable & Sendable) -> Filter {
        Filter(node: .compare(key, .notEqual, value, Options()))
    }

    /// Rows whose `key` compares with `value` as `op` says.
    public static func compare(
        _ key: String, _ op: Operator, _ value: some Encodable & Sendable, options: Options = Options()
    ) -> Filter {
        Filter(node: .compare(key, op, value, options))
    }

    /// Rows whose `key` lies between `lower` and `upper`, both included.
    public static func between<Value: Encodable & Sendable>(_ key: String, _ lower: Value, _ upper: Value) -> Filter {
        Filter(node: .between(key, lower, upper))
    }

    /// Rows whose `key` is one of `values` (`key = ANY($1)`: one parameter, whatever the count).
    /// Negated, it also matches rows where `key` is NULL, as NSPredicate's `NOT (key IN ...)` does.
    ///
    /// ```swift
    /// let books: [BookModel] = try await service.fetch(where: .in("uuid", ids))
    /// ```
    public static func `in`<Value: Encodable & Sendable>(_ key: String, _ values: [Value]) -> Filter {
        Filter(node: .among(key, values))
    }

    /// Rows where `key` is NULL.
    public static func isNull(_ key: String) -> Filter { Filter(node: .isNull(key, true)) }
    /// Rows where `key` is not NULL.
    public static func isNotNull(_ key: String) -> Filter { Filter(node: .isNull(key, false)) }
    /// Every row (`TRUEPREDICATE`) or none (`FALSEPREDICATE`).
    public static func constant(_ value: Bool) -> Filter { Filter(node: .constant(value)) }

    /// Rows both filters match.
    public static func && (lhs: Filter, rhs: Filter) -> Filter { Filter(node: .all([lhs.node, rhs.node])) }
    /// Rows either filter matches.
    public static func || (lhs: Filter, rhs: Filter) -> Filter { Filter(node: .any([lhs.node, rhs.node])) }
    /// Rows `filter` does not match.
    public static prefix func ! (filter: Filter) -> Filter { Filter(node: .not(filter.node)) }

    /// The keys the filter names, relationship paths included.
    var keys: [String] { Self.keys(of: node) }

    /// The error of the first part that cannot be compiled (an `invalid` node), for a caller that checks before it
    /// takes a connection.
    var refusal: StructPostgresError? { Self.refusal(in: node) }

    private static func refusal(in node: Node) -> StructPostgresError? {
        switch node {
        case .invalid(let error): error
        case .compare, .between, .isNull, .among, .constant: nil
        case .quantified(_, let inner), .not(let inner): refusal(in: inner)
        case .all(let nodes), .any(let nodes): nodes.lazy.compactMap(refusal(in:)).first
        }
    }

    private static func keys(of node: Node) -> [String] {
        switch node {
        case .compare(let key, _, _, _), .between(let key, _, _), .isNull(let key, _), .among(let key, _): [key]
        case .constant, .invalid: []
        case .quantified(_, let inner), .not(let inner): keys(of: inner)
        case .all(let nodes), .any(let nodes): nodes.flatMap(keys(of:))
        }
    }
}
