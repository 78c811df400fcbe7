import StructPostgresCore
import StructPostgresDriver

/// A relationship of an entity, declared in its ``EntityProtocol/relationships``: which ``Related``
/// slot it fills and how the tables link. The links themselves (foreign keys, join tables, delete rules)
/// live in the migrations; a declaration names what the catalog cannot guess.
///
/// ```swift
/// struct BookEntity: EntityProtocol {
///     static let table = "books"
///     static let relationships: [Relationship<Self>] = [
///         .toOne("author", \.$author),                                   // books.author_id -> authors
///         .toMany("reviews", \.$reviews, orderedBy: [.ascending("createdAt")]), // reviews.book_id -> books
///     ]
///     var uuid: UUID
///     var title: String?
///     var authorID: UUID?
///     @Related var author: AuthorModel?
///     @Related var reviews: [ReviewModel]
///     ...
/// }
/// ```
public struct Relationship<Source: EntityProtocol>: Sendable {
    /// Loads the targets of the sources and fills each source's slot.
    typealias Loader = @Sendable (_ targets: any RelationshipTargets, _ sources: inout [Source]) async throws -> Void

    /// The name used in ``Loading`` paths and error messages.
    public let name: String
    let kind: RelationshipKind
    let target: TargetInfo
    let orderedBy: [SortKey]
    let load: Loader
    /// For a join-table relationship: whether the source's slot was assigned.
    let isAssigned: @Sendable (Source) -> Bool
    /// For a join-table relationship: the values of `column` of the children in the source's slot.
    let childKeys: @Sendable (Source, _ column: String) throws -> [ColumnValue]

    /// A to-one relationship through a foreign-key column of the source's table (a book's author).
    ///
    /// - Parameters:
    ///   - name: the relationship's name, as ``Loading`` and format strings (`author.name`) use it.
    ///   - slot: the source's ``Related`` property that holds the target.
    ///   - column: the foreign-key column (or property); found in the catalog when the source's table has exactly
    ///     one foreign key to the target's table.
    public static func toOne<Target: EntityProtocol>(
        _ name: String, _ slot: any WritableKeyPath<Source, Related<Target?>> & Sendable, column: String? = nil
    ) -> Self {
        Self(
            name: name, kind: .toOne(column: column), target: TargetInfo(Target.self), orderedBy: [],
            load: { targets, sources in
                let found = try await targets.of(Target.self)
                for index in sources.indices { sources[index][keyPath: slot] = Related(wrappedValue: found[index]?.first) }
            },
            isAssigned: { _ in false }, childKeys: { _, _ in [] })
    }

    /// A to-many relationship whose children hold a foreign key to the source: a back reference
    /// (a book's reviews, each holding its book's uuid). Loaded only: children are written through their
    /// own column.
    ///
    /// - Parameters:
    ///   - name: the relationship's name, as ``Loading`` and format strings (`ANY reviews.content`) use it.
    ///   - slot: the source's ``Related`` property that holds the children.
    ///   - column: the children's foreign-key column (or property); found in the catalog when the target's table
    ///     has exactly one foreign key to the source's table.
    ///   - orderedBy: the order of the children in the slot.
    public static func toMany<Target: EntityProtocol>(
        _ name: String, _ slot: any WritableKeyPath<Source, Related<[Target]>> & Sendable,
        backReference column: String? = nil, orderedBy: [SortKey] = []
    ) -> Self {
        Self(
            name: name, kind: .backReference(column: column), target: TargetInfo(Target.self), orderedBy: orderedBy,
            load: manyLoader(slot), isAssigned: { _ in false }, childKeys: { _, _ in [] })
    }

    /// A to-many relationship owned by the source through a join table (a store's set of books).
    /// Assigning the slot replaces the set when the source is written: children no longer in it lose
    /// their link (or are deleted, with ``RemovalRule/deleteOrphans``), new ones are linked.
    ///
    /// - Parameters:
    ///   - name: the relationship's name, as ``Loading`` and format strings (`ANY books.price`) use it.
    ///   - slot: the source's ``Related`` property that holds the children.
    ///   - table: the join table, e.g. `"store_books"`.
    ///   - parentColumn: the join table's column referencing the source; found in the catalog when the join table
    ///     has exactly one foreign key to the source's table.
    ///   - childColumn: the join table's column referencing the target; found in the catalog likewise.
    ///   - orderedBy: the order of the children in the slot.
    ///   - onRemove: what happens to a child no longer in the slot: unlinked (``RemovalRule/unlink``) or deleted.
    public static func toMany<Target: EntityProtocol>(
        _ name: String, _ slot: any WritableKeyPath<Source, Related<[Target]>> & Sendable,
        through table: String, parentColumn: String? = nil, childColumn: String? = nil,
        orderedBy: [SortKey] = [], onRemove: RemovalRule = .unlink
    ) -> Self {
        Self(
            name: name,
            kind: .through(table: table, parentColumn: parentColumn, childColumn: childColumn, onRemove: onRemove),
            target: TargetInfo(Target.self), orderedBy: orderedBy, load: manyLoader(slot),
            isAssigned: { $0[keyPath: slot].isLoaded },
            childKeys: { source, column in
                try (source[keyPath: slot].loaded ?? []).map { try KeyEncoding.value(of: $0, column: column) }
            })
    }

    private static func manyLoader<Target: EntityProtocol>(
        _ slot: any WritableKeyPath<Source, Related<[Target]>> & Sendable
    ) -> Loader {
        { targets, sources in
            let found = try await targets.of(Target.self)
            for index in sources.indices { sources[index][keyPath: slot] = Related(wrappedValue: found[index] ?? []) }
        }
    }

    var writesJoinTable: Bool {
        if case .through = kind { return true }
        return false
    }

    /// `BookEntity.author`, for messages.
    var qualifiedName: String { "\(Source.self).\(name)" }

    var info: RelationshipInfo {
        RelationshipInfo(name: name, qualifiedName: qualifiedName, kind: kind, target: target, orderedBy: orderedBy)
    }
}

enum RelationshipKind: Sendable, Equatable {
    /// The source's column references the target.
    case toOne(column: String?)
    /// The target's column references the source: a back reference.
    case backReference(column: String?)
    /// Rows of a join table reference both.
    case through(table: String, parentColumn: String?, childColumn: String?, onRemove: RemovalRule)

    var isToMany: Bool {
        if case .toOne = self { return false }
        return true
    }
}

/// A relationship without its source type, as filters and resolution need it.
struct RelationshipInfo: Sendable {
    let name: String
    let qualifiedName: String
    let kind: RelationshipKind
    let target: TargetInfo
    let orderedBy: [SortKey]
}

/// What happens to a child that leaves a join-table set (``Relationship/toMany(_:_:through:parentColumn:childColumn:orderedBy:onRemove:)``).
public enum RemovalRule: Sendable, Equatable {
    /// Only the link (the join row) goes; the child stays. Core Data's nullify.
    case unlink
    /// The child is deleted too once no set links it any more (its own delete rules apply).
    case deleteOrphans
}

/// The target entity type of a relationship, as far as resolution needs it.
struct TargetInfo: Sendable {
    let entity: String
    let table: String
    let naming: ColumnNaming
    let uniqueKey: [String]
    let versionKey: String?
    /// The target's own relationships, read when a key path or a load goes through them.
    let relationships: @Sendable () -> [RelationshipInfo]

    init<Target: EntityProtocol>(_ type: Target.Type) {
        entity = "\(Target.self)"
        table = Target.table
        naming = Target.columnNaming
        uniqueKey = Target.uniqueKey
        versionKey = Target.versionKey
        relationships = { Target.relationships.map(\.info) }
    }
}

/// One column's value read out of an entity by encoding it: the keys that join rows link.
enum KeyEncoding {
    static func value<E: EntityProtocol>(of entity: E, column: String) throws -> ColumnValue {
        let known = RowEncoder.learntShape(of: E.self)
        let row = try RowEncoder(naming: E.columnNaming).encode(entity, expecting: known)
        if known == nil { RowEncoder.learn(row, of: E.self) }
        guard let index = row.columns.firstIndex(of: column) else {
            throw StructPostgresError(
                .undefinedColumn, "\(E.self) does not encode column '\(column)', which a relationship links by",
                entity: "\(E.self)", table: E.table, column: column)
        }
        return row.values[index]
    }
}

/// What loading one relationship of some source rows finds: the targets of each source row, in the rows' order.
protocol RelationshipTargets {
    /// The targets of each source row; `nil` where its link is NULL or matched nothing.
    func of<T: EntityProtocol>(_ type: T.Type) async throws -> [[T]?]
}
