import Foundation

/// Every verb that takes a filter also takes Swift's `#Predicate`, on the model or on its entity (see
/// ``Filter/init(_:)``): compiled to SQL with its values bound; an expression that cannot be compiled fails the call
/// with ``StructPostgresError/Code-swift.struct/unsupportedPredicate`` naming the part.
///
/// ```swift
/// let since = Date.now.addingTimeInterval(-86_400)
/// let recent = try await service.fetch(ReviewModel.self, where: #Predicate<ReviewModel> { $0.createdAt > since },
///                                      sortedBy: [.descending("createdAt")])
/// ```
extension CoreDataServiceProtocol {
    /// The models matching a `#Predicate`.
    public func fetch<Model: EntityConvertible, Root>(
        _ type: Model.Type, where predicate: Predicate<Root>, sortedBy sort: [SortKey] = [], limit: Int? = nil,
        offset: Int? = nil, loading: Loading = .default
    ) async throws -> [Model] {
        try await fetch(type, where: Filter(predicate), sortedBy: sort, limit: limit, offset: offset, loading: loading)
    }

    /// The first model matching a `#Predicate`, or `nil`.
    public func fetchOne<Model: EntityConvertible, Root>(
        _ type: Model.Type, where predicate: Predicate<Root>, sortedBy sort: [SortKey] = [], loading: Loading = .default
    ) async throws -> Model? {
        try await fetchOne(type, where: Filter(predicate), sortedBy: sort, loading: loading)
    }

    /// How many rows match a `#Predicate`.
    public func count<Model: EntityConvertible, Root>(_ type: Model.Type, where predicate: Predicate<Root>) async throws -> Int {
        try await count(type, where: Filter(predicate))
    }

    /// Whether any row matches a `#Predicate`.
    public func exists<Model: EntityConvertible, Root>(_ type: Model.Type, where predicate: Predicate<Root>) async throws -> Bool {
        try await exists(type, where: Filter(predicate))
    }

    /// Deletes the rows matching a `#Predicate` with one statement; returns how many.
    @discardableResult
    public func deleteAll<Model: EntityConvertible, Root>(_ type: Model.Type, where predicate: Predicate<Root>) async throws -> Int {
        try await deleteAll(type, where: Filter(predicate))
    }
}

extension PostgresAccess {
    /// The models matching a `#Predicate`, one at a time as their rows arrive.
    public func stream<Model: EntityConvertible, Root>(
        _ type: Model.Type, where predicate: Predicate<Root>, sortedBy sort: [SortKey] = [], limit: Int? = nil
    ) -> ModelStream<Model> {
        stream(type, where: Filter(predicate), sortedBy: sort, limit: limit)
    }
}

extension PostgresService {
    /// The models matching a `#Predicate`, now and after every change.
    public func observe<Model: EntityConvertible, Root>(
        _ type: Model.Type, where predicate: Predicate<Root>, sortedBy sort: [SortKey] = [], limit: Int? = nil,
        loading: Loading = .default
    ) -> ModelObservation<Model> {
        observe(type, where: Filter(predicate), sortedBy: sort, limit: limit, loading: loading)
    }
}
