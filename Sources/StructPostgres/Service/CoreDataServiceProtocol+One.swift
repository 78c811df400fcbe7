import StructPostgresCore
import StructPostgresDriver

/// Reading one row.
extension CoreDataServiceProtocol {
    /// The first model matching `filter` in the order of `sortedBy`, or `nil` when none matches; reads one row.
    ///
    /// ```swift
    /// guard let newest = try await service.fetchOne(ReviewModel.self, sortedBy: [.descending("createdAt")]) else { return }
    /// ```
    public func fetchOne<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil, sortedBy sort: [SortKey] = [], loading: Loading = .default
    ) async throws -> Model? {
        try await fetch(type, where: filter, sortedBy: sort, limit: 1, offset: nil, loading: loading).first
    }

    /// The model whose unique key (``EntityProtocol/uniqueKey``, `uuid` unless declared otherwise) is `id`, or
    /// `nil` when there is none.
    ///
    /// ```swift
    /// guard let book = try await service.find(BookModel.self, id: bookID) else { throw NotFound() }
    /// ```
    /// - Throws: `invalidValue` for an entity whose unique key has more than one column: use
    ///   ``fetchOne(_:where:sortedBy:loading:)`` with each part.
    public func find<Model: EntityConvertible>(
        _ type: Model.Type, id: some Encodable & Sendable, loading: Loading = .default
    ) async throws -> Model? {
        let key = Model.Entity.uniqueKey
        guard key.count == 1 else {
            throw StructPostgresError(
                .invalidValue,
                "find(_:id:) takes one value, but \(Model.Entity.self).uniqueKey has \(key.count) parts (\(key.joined(separator: ", "))); use fetchOne(where:) with each",
                entity: "\(Model.Entity.self)", table: Model.Entity.table)
        }
        return try await fetchOne(type, where: .equal(key[0], id), loading: loading)
    }
}
