import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession {
    /// The entities each of `keys` finds, as `request` finds them for its own key (its filter one equality on one
    /// column: see ``SelectShape/pointValue``), with one statement for every key: the request's own text run once per
    /// key by `CROSS JOIN LATERAL`, so its sort and limit apply to each key's rows. Relationships are loaded once, for
    /// every row. `keys` are distinct; the result has one array per key, in order.
    func fetchPoints<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest, keys: [ColumnValue], loading: Loading) async throws
        -> [[E]]
    {
        let (single, description) = try await selectStatement(E.self, request)
        guard let wire = keys.first?.wireType, single.bindings.count == 1, single.sql.components(separatedBy: "$1").count == 2 else {
            throw StructPostgresError(
                .client, "the fetch cannot be answered with others", entity: description.entity, table: description.schema.table)
        }
        var statement = Statement(sql: "")
        let parameter = statement.bind(array: BinaryColumnArray(element: wire, values: keys))
        let inner = single.sql.replacingOccurrences(of: "$1", with: "k.structpg_key")
        let order = try request.sort.map { ", " + (try $0.sql(for: description)) }.joined()
        statement.sql =
            "SELECT t.*, k.structpg_place FROM unnest(\(parameter)::\(wire.sqlName)[]) WITH ORDINALITY AS k(structpg_key, structpg_place) "
            + "CROSS JOIN LATERAL (\(inner)) AS t ORDER BY k.structpg_place\(order)"
        var decoded = try await decodedRows(E.self, statement, description)
        try await loadRelationships(&decoded, loading: loading)
        let placeColumn = description.schema.columnOrder.count
        var found = Array(repeating: [E](), count: keys.count)
        for (row, entity) in decoded.entities.enumerated() {
            let place = try decoded.cells.cell(row: row, column: placeColumn).decode(Int64.self)
            found[Int(place) - 1].append(entity)
        }
        return found
    }
}
