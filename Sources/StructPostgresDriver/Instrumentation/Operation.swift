import StructPostgresCore

/// What an operation is, described once on its way down the one path (``OperationPath``): what it does, on
/// which entity and table, whether it reads or writes, and how many rows it carries. Where it runs is the
/// path's. Instrumentation, routing and coalescing read it here.
package struct Operation: Sendable {
    package enum Kind: String, Sendable {
        case fetch, count, exists, stream, aggregate, upsert, delete, deleteAll, `import`, query, execute, transaction, migrate
        /// The library's own look-up (a statement's text, the notification channels of tables): no span, no metrics.
        case lookup
    }

    package let kind: Kind
    /// The table the operation works on, as its entity declares it; `nil` for raw SQL and transactions.
    let table: String?
    /// Models or rows in a write's batch.
    let rows: Int?
    /// Which way `structpg.rows` counts the rows of the result (a ``RowCounting``); `nil`: they are not counted.
    package var countsRows: RowDirection?

    /// The `direction` dimension of `structpg.rows`.
    package enum RowDirection: String, Sendable {
        case read, written
    }

    package init(_ kind: Kind, table: String? = nil, rows: Int? = nil) {
        self.kind = kind
        self.table = table
        self.rows = rows
    }

    /// Whether the operation only reads: a read may run on a replica; raw SQL may write, so it does not count.
    package var isRead: Bool {
        switch kind {
        case .fetch, .count, .exists, .stream, .aggregate: true
        case .upsert, .delete, .deleteAll, .import, .query, .execute, .transaction, .migrate, .lookup: false
        }
    }
}
