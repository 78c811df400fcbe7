import StructPostgresCore
import StructPostgresDriver

/// A fetch by pages as the service receives it.
struct PageRequest: Sendable {
    var filter: Filter?
    var sort: [SortKey] = []
    var size: Int
    var after: PageCursor?
    var includingTotal = false
}

/// One page of entities, the cursor after its last row, and the count of every matching row when asked.
struct EntityPage<E: EntityProtocol> {
    var entities: [E]
    var next: PageCursor?
    var total: Int?
}

extension DatabaseSession {
    /// The entities of one page: `SELECT ... WHERE <filter> AND <after the cursor> ORDER BY <sort, unique key>
    /// LIMIT <size + 1>` (the row past the page says whether another follows), their relationships loaded.
    func fetchPage<E: EntityProtocol>(
        _ type: E.Type, _ request: PageRequest, seal: PageCursorSeal, loading: Loading
    ) async throws -> EntityPage<E> {
        let description = try await describe(E.self)
        let names = (entity: description.entity, table: description.schema.table)
        guard request.size > 0 else {
            throw StructPostgresError(.invalidValue, "pageSize \(request.size) is not positive", entity: names.entity, table: names.table)
        }
        let order = try KeysetOrder(request.sort, description)
        let filterDigest = try request.filter?.fingerprint() ?? 0
        let table = description.schema.quotedTable
        var statement = Statement(sql: "")
        var filterCondition: String?
        if let filter = request.filter {
            var builder = FilterSQL(relationships: try await relationships(along: filter.keys, from: description))
            filterCondition = try builder.condition(
                filter.node, in: FilterSQL.Scope(description: description, qualifier: table), into: &statement)
        }
        var segments: [String?] = [nil]
        if let cursor = request.after {
            let position = try seal.open(cursor, entity: names.entity, table: names.table)
            guard position.order == order.digest, position.cells.count == order.terms.count else {
                throw StructPostgresError(
                    .invalidValue,
                    "the page cursor was made for another sort (or another model): pass it back with the sort keys of the fetch that returned it (here: \(order.terms.map(\.column).joined(separator: ", ")))",
                    entity: names.entity, table: names.table)
            }
            guard position.filter == filterDigest else {
                throw StructPostgresError(
                    .invalidValue,
                    "the page cursor was made for another filter: pass it back with the filter of the fetch that returned it, or start again from the first page",
                    entity: names.entity, table: names.table)
            }
            segments = order.segments(after: position.cells, qualifier: table, into: &statement)
        }
        let limit = " LIMIT \(request.size + 1)"
        let selects = segments.map { segment in
            let conditions = [filterCondition, segment].compactMap { $0 }
            return description.schema.selectAll
                + (conditions.isEmpty ? "" : " WHERE " + conditions.map { "(\($0))" }.joined(separator: " AND "))
                + " ORDER BY \(order.orderBy(qualifier: table))" + limit
        }
        // Two segments (either side of the first column's NULLs) are each read in the index's order, then merged.
        statement.sql =
            selects.count == 1
            ? selects[0]
            : "SELECT * FROM (" + selects.map { "(\($0))" }.joined(separator: " UNION ALL ")
                + ") AS \"page\" ORDER BY \(order.orderBy(qualifier: "\"page\""))" + limit

        var decoded = try await decodedRows(E.self, statement, description)
        try await loadRelationships(&decoded, loading: loading)
        var page = EntityPage<E>(entities: Array(decoded.entities.prefix(request.size)))
        if decoded.entities.count > request.size {
            let row = request.size - 1
            let cells = order.terms.map { term -> PagePosition.Cell in
                let column = decoded.layout.indexes[term.column]!
                let cell = decoded.cells.cell(row: row, column: column)
                return PagePosition.Cell(
                    dataType: cell.dataType.rawValue, binary: cell.format == .binary, bytes: cell.bytes.map { Array($0.readableBytesView) })
            }
            page.next = try seal.seal(PagePosition(order: order.digest, filter: filterDigest, cells: cells))
        }
        if request.includingTotal { page.total = try await count(E.self, filter: request.filter) }
        return page
    }
}
