import PostgresNIO
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// Reads a server-side cursor in batches, each a complete result of `FETCH n`, while the caller decodes one row
/// at a time; the next batch is on its way while the current one is decoded.
///
/// A stream reads its rows this way instead of through PostgresNIO's row sequence: that sequence holds rows
/// back until its reader asks for more, and a connection lost meanwhile crashes the process (PostgresNIO
/// 1.33.2 traps in `RowStreamStateMachine` when the closing connection delivers rows nobody asked for). Each
/// batch here is collected as it arrives and is bounded in size, so memory stays flat without back-pressure.
/// Upstream: no issue found (related: vapor/postgres-nio#449, #435); canary:
/// `StreamingTests.aRawConnectionsRowSequenceStillTrapsWhenItsConnectionIsLost`.
final class CursorReader: @unchecked Sendable {
    /// Rows of the first batch: the first row comes quickly, and the batch shows how large rows are.
    static let firstBatch = 256
    /// Later batches hold about this many bytes of row data, between ``minimumBatch`` and ``maximumBatch`` rows.
    static let batchBytes = 2 << 20
    static let minimumBatch = 16
    static let maximumBatch = 8_192

    private let session: DatabaseSession
    private let name: String
    /// Throws when the session may no longer be used (the transaction the cursor was declared in has ended).
    private let ensureUsable: @Sendable () throws -> Void
    private let layout: RowLayout
    private var decoder: RowDecoder
    private var row = 0
    /// The batch on its way, and how many rows it asked for.
    private var pending: (cells: EventLoopFuture<ResultCells>, requested: Int)?
    /// Whether the pending batch has arrived (set on the event loop, read by ``abandon()``).
    private let pendingArrived = ArrivalFlag()

    private final class ArrivalFlag: Sendable {
        let arrived = Atomic(true)
    }

    /// Starts reading the cursor `name` declared on `session`'s connection.
    init(session: DatabaseSession, name: String, layout: RowLayout, ensureUsable: @escaping @Sendable () throws -> Void = {}) {
        self.session = session
        self.name = name
        self.ensureUsable = ensureUsable
        self.layout = layout
        self.decoder = RowDecoder(layout: layout)
        fetch(Self.firstBatch)
    }

    /// The next row as an `E`, or `nil` after the last one.
    func next<E: EntityProtocol>(_ type: E.Type) async throws -> E? {
        while row >= decoder.cells.count {
            guard let (cells, requested) = pending else { return nil }
            pending = nil
            let batch = try await receive(cells)
            if batch.count == requested { fetch(Self.batchSize(after: batch)) }
            decoder = RowDecoder(layout: layout, cells: batch)
            row = 0
        }
        defer { row += 1 }
        return try DatabaseSession.decode(E.self, row: row, decoder)
    }

    private func fetch(_ rows: Int) {
        let sql = "FETCH \(rows) FROM \(name)"
        session.logFetch(sql)
        let connection = session.connection
        let cells: EventLoopFuture<ResultCells>
        do {
            try ensureUsable()
            cells = session.collectCells(PostgresQuery(unsafeSQL: sql))
        } catch {
            cells = connection.eventLoop.makeFailedFuture(error)
        }
        pendingArrived.arrived.store(false, ordering: .relaxed)
        cells.whenComplete { [pendingArrived] _ in pendingArrived.arrived.store(true, ordering: .relaxed) }
        pending = (cells, rows)
    }

    /// The stream ends before its last row, on a connection of its own: a batch still on its way would keep the
    /// connection until all its rows have arrived (up to ``batchBytes``, and the server may still be producing
    /// them), so the connection is closed instead and the pool opens another when needed.
    func abandon() {
        guard pending != nil, !pendingArrived.arrived.load(ordering: .relaxed) else { return }
        session.connection.close().whenComplete { _ in }
    }

    /// Waits for a batch; a cancelled task cancels it on the server and closes the connection.
    private func receive(_ cells: EventLoopFuture<ResultCells>) async throws -> ResultCells {
        let sql = "FETCH FROM \(name)"
        do {
            try session.checkCancellation(before: sql)
            return try await session.canceller.cancellable(on: session.connection) { try await cells.get() }
        } catch {
            if Task.isCancelled { throw DatabaseSession.cancelled(error, sql: sql) }
            throw StructPostgresError.from(error, sql: sql).with(entity: layout.entity, table: layout.schema.table)
        }
    }

    /// Rows of the batch after `batch`: about ``batchBytes`` of data.
    static func batchSize(after batch: ResultCells) -> Int {
        let rowBytes = max(1, batch.byteCount / max(1, batch.count))
        return min(maximumBatch, max(minimumBatch, batchBytes / rowBytes))
    }
}

extension DatabaseSession {
    /// `DECLARE name NO SCROLL CURSOR FOR <statement>`, in the open transaction.
    func declareCursor(_ name: String, for statement: Statement) async throws {
        var declare = statement
        declare.sql = "DECLARE \(name) NO SCROLL CURSOR FOR \(statement.sql)"
        declare.plannedPerExecution = true
        _ = try await run(declare)
    }

    func logFetch(_ sql: String) {
        if context.logger.logLevel <= .debug {
            context.logger.debug("query", metadata: ["sql": "\(sql)", "binds": "0"])
        }
    }
}
