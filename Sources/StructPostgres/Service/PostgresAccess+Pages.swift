import StructPostgresCore
import StructPostgresDriver

/// Pages in keyset order.
extension PostgresAccess {
    /// One page of the models matching `filter`, in the order of `sortedBy` with the unique key as the last
    /// tie-breaker, and the cursor of the next page: pass it back as `after` with the same filter and sort to
    /// continue after the last model of this one. Rows inserted or deleted between two pages neither repeat nor
    /// skip the rows that stay (a page starts after a row's position, not after a number of rows); a row whose sort
    /// values change may. Each page reads `pageSize + 1` rows, and costs what `fetch` with `limit: pageSize` costs,
    /// however deep it is; `includingTotal` adds a `count(*)` of every matching row (a scan of them all, on every
    /// page), on the same connection.
    ///
    /// ```swift
    /// let first = try await db.fetch(BookModel.self, where: \.price < 30, sortedBy: [.ascending("title")], pageSize: 20)
    /// let link = first.next.map { "/books?after=\($0)" }          // the next page's link; nil on the last page
    /// let second = try await db.fetch(BookModel.self, where: \.price < 30, sortedBy: [.ascending("title")], pageSize: 20,
    ///                                 after: first.next)
    /// ```
    /// - Throws: `invalidValue` naming the mismatch for a cursor made for another sort or filter, one this service
    ///   did not seal (see ``PageCursor``), or a `pageSize` under 1; `undefinedColumn` for a sort key that names no
    ///   column of the table. Offsets (`fetch(...limit:offset:)`) stay as they are.
    public func fetch<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil, sortedBy sort: [SortKey] = [], pageSize: Int,
        after cursor: PageCursor? = nil, includingTotal: Bool = false, loading: Loading = .default
    ) async throws -> Page<Model> {
        try await operationPath.fetchPage(
            type, PageRequest(filter: filter?.filter, sort: sort, size: pageSize, after: cursor, includingTotal: includingTotal),
            loading: loading)
    }
}
