import StructPostgresCore
import StructPostgresDriver

extension OperationPath {
    /// Runs a query of figures and decodes its rows with `decode`, inside the operation (whose span a decoding error
    /// ends). A query that cannot run (a key path naming no column, a `having` without grouping) fails before a
    /// connection is taken.
    func aggregate<E: EntityProtocol, R>(
        _ type: E.Type, _ query: AggregateQuery, countsRows: Bool = false, _ decode: (AggregateRows) throws -> R
    ) async throws -> R {
        if let refusal = query.filter?.refusal ?? query.refusal(entity: "\(E.self)", table: E.table) {
            throw refusal.with(entity: "\(E.self)", table: E.table)
        }
        var operation = Operation(.aggregate, E.self)
        if countsRows { operation.countsRows = .read }
        return try await perform(operation) { try decode(try await $0.aggregate(E.self, query)) }
    }
}
