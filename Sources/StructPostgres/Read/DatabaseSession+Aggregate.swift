import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession {
    /// Runs a query of figures on the entity's table: its keys and figures checked against the table's columns
    /// before anything is sent.
    func aggregate<E: EntityProtocol>(_ type: E.Type, _ query: AggregateQuery) async throws -> AggregateRows {
        let description = try await describe(E.self)
        let relationships = try await relationships(along: query.filter?.keys ?? [], from: description)
        let statement = try query.statement(description, relationships: relationships)
        let cells = try await tagged(description) { try await runCells(statement) }
        let labels = query.keys.map { (try? $0.get()) ?? "?" } + query.aggregates.map(\.label)
        let averages = query.aggregates.indices.filter { query.aggregates[$0].function == .average }.map { $0 + query.keys.count }
        return AggregateRows(
            cells: cells, entity: description.entity, table: description.schema.table, labels: labels, averages: Set(averages))
    }
}
