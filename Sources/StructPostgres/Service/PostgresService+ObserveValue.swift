import StructPostgresCore
import StructPostgresDriver

extension PostgresService {
    /// The value `read` returns, now and again after every committed change of the tables of `models` (their own
    /// tables; list the models of the relationships the read goes through too): a figure on a dashboard kept up to
    /// date (see ``ValueObservation``). `read` runs on the primary, so that it sees the change that woke it. The
    /// tables need the triggers of ``ChangeNotifications``.
    ///
    /// ```swift
    /// for try await (reviews, rating) in service.observe(changesOf: ReviewModel.self, read: { db in
    ///     try await db.aggregate(of: ReviewModel.self, .count, .average(\.stars), where: \.bookID == bookID)
    /// }) {
    ///     print("\(reviews) reviews, \(rating ?? 0) stars")
    /// }
    /// ```
    /// - Throws: (from the first iteration) `invalidConfiguration` naming a table without the triggers; the error
    ///   of a read.
    public func observe<Value: Sendable>(
        changesOf models: any EntityConvertible.Type..., read: @escaping @Sendable (PrimaryAccess) async throws -> Value
    ) -> ValueObservation<Value> {
        let access = primary
        let tables = models.map { $0.tableName }
        return ValueObservation(
            path: access.path, tables: tables, entity: models.map { "\($0)" }.joined(separator: ", ")
        ) { try await read(access) }
    }
}

extension EntityConvertible {
    /// The table of the model's entity.
    fileprivate static var tableName: String { Entity.table }
}
