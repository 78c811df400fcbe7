/// Which relationships a fetch loads into the fetched entities' ``Related`` slots, and how deep.
/// Each relationship costs one query per level, whatever the number of rows (`WHERE key = ANY($1)`).
///
/// A fetch that names none loads ``default``: the service's
/// ``PostgresConfiguration/defaultLoading``, every relationship to three levels unless you
/// configure another. Ported code reads related models in `toModel()` as Core Data's faults let it, so a plain
/// fetch returns the graph whole; a server whose hot paths want one query sets `defaultLoading = .none` once
/// and asks for relationships where it reads them.
///
/// ```swift
/// let stores = try await service.fetch(StoreModel.self, loading: .only("books.author", "books.reviews"))
/// let flat = try await service.fetch(BookModel.self, loading: .none)
/// ```
public struct Loading: Sendable, Hashable {
    private enum Mode: Sendable, Hashable {
        case all(depth: Int)
        case paths([String: Loading])
        /// The service's configured default.
        case configured
    }

    private let mode: Mode

    /// Every relationship, and theirs, down to `depth` levels.
    public static func all(depth: Int) -> Loading { Loading(mode: .all(depth: max(0, depth))) }

    /// The service's ``PostgresConfiguration/defaultLoading``; unless configured, every
    /// relationship to three levels: a store's books, their authors and reviews, the reviews' users.
    public static let `default` = Loading(mode: .configured)

    /// What ``default`` stands for when nothing else is configured.
    public static let threeLevels = all(depth: 3)

    /// No relationship: slots stay unloaded.
    public static let none = all(depth: 0)

    /// The relationships on these dotted paths of relationship names (`"books.author"` loads `books` too).
    public static func only(_ paths: String...) -> Loading { only(paths) }

    /// The relationships on these dotted paths of relationship names.
    public static func only(_ paths: [String]) -> Loading {
        var tree: [String: Loading] = [:]
        for path in paths {
            let names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            tree = insert(names[...], into: tree)
        }
        return Loading(mode: .paths(tree))
    }

    private static func insert(_ names: ArraySlice<String>, into tree: [String: Loading]) -> [String: Loading] {
        guard let first = names.first else { return tree }
        var tree = tree
        var children: [String: Loading] = [:]
        if case .paths(let existing) = tree[first]?.mode { children = existing }
        tree[first] = Loading(mode: .paths(insert(names.dropFirst(), into: children)))
        return tree
    }

    /// This loading, with ``default`` replaced by `configured` (itself ``threeLevels`` if it is ``default``).
    package func resolved(_ configured: Loading) -> Loading {
        guard mode == .configured else { return self }
        return configured.mode == .configured ? .threeLevels : configured
    }

    package var isEmpty: Bool {
        switch mode {
        case .configured: Self.threeLevels.isEmpty
        case .all(let depth): depth == 0
        case .paths(let tree): tree.isEmpty
        }
    }

    /// What to load below relationship `name`, or `nil` if `name` is not loaded.
    package func nested(_ name: String) -> Loading? {
        switch mode {
        case .configured: Self.threeLevels.nested(name)
        case .all(let depth): depth > 0 ? .all(depth: depth - 1) : nil
        case .paths(let tree): tree[name]
        }
    }

    /// Refuses path names that are not relationships of the entity.
    package func validate(relationships names: @autoclosure () -> [String], entity: @autoclosure () -> String) throws {
        guard case .paths(let tree) = mode else { return }
        let names = names()
        let entity = entity()
        for requested in tree.keys.sorted() where !names.contains(requested) {
            let known = names.isEmpty ? "it has no relationships" : "its relationships are \(names.joined(separator: ", "))"
            throw StructPostgresError(
                .invalidConfiguration, "cannot load '\(requested)': \(entity) has no relationship of that name; \(known)",
                entity: entity)
        }
    }
}
