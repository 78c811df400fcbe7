import PostgresNIO
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// The models of a fetch, delivered one at a time as their rows arrive: memory stays flat whatever
/// the number of rows.
///
/// Iterating runs the query through a server-side cursor read in batches of bounded size. From the service, the cursor
/// lives on one pooled connection in a read-only transaction, held until the sequence ends, fails, or its iterator is
/// dropped; the rows come from one snapshot, as with a single query. From a transaction, the cursor is declared in that
/// transaction and closes with it: iterate it inside the transaction's closure. Relationships are not loaded (slots
/// stay unloaded).
///
/// The stream is one operation for tracing and metrics: its span starts at the first iteration and ends at the last
/// row, at an error, or when the iterator is dropped, with the rows read (`db.response.returned_rows`).
///
/// A lost connection ends the loop with ``StructPostgresError/Code-swift.struct/connectionLost``; a cancelled
/// task ends it with ``StructPostgresError/Code-swift.struct/queryCancelled``, and the server stops the query.
///
/// ```swift
/// for try await review in service.stream(ReviewModel.self, sortedBy: [.ascending("createdAt")]) {
///     try await archive(review)
/// }
/// ```
public struct ModelStream<Model: EntityConvertible>: AsyncSequence, Sendable {
    /// One model, built from one row.
    public typealias Element = Model

    /// Declares the cursor where the stream runs: given by the operations layer.
    let open: @Sendable () async throws -> OpenCursor

    /// An iterator that declares the cursor at its first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(open: open) }

    /// Reads the cursor's rows in order; gives the cursor's session back at the end, at an error, or when dropped.
    public struct Iterator: AsyncIteratorProtocol {
        private let open: @Sendable () async throws -> OpenCursor
        private var cursor: OpenCursor?
        private var finished = false

        init(open: @escaping @Sendable () async throws -> OpenCursor) { self.open = open }

        /// The next model; `nil` after the last row. An error ends the stream and is thrown as a
        /// ``StructPostgresError``.
        public mutating func next() async throws -> Model? {
            guard !finished else { return nil }
            do {
                if cursor == nil { cursor = try await open() }
                guard let entity = try await cursor!.next(Model.Entity.self) else {
                    finish(nil)
                    return nil
                }
                return try entity.toModel()
            } catch {
                let failure = StructPostgresError.from(Task.isCancelled ? CancellationError() : error, sql: nil)
                finish(failure)
                throw failure
            }
        }

        /// Gives the session back and drops the last batch, so that nothing of the result outlives the stream.
        private mutating func finish(_ error: (any Error)?) {
            finished = true
            cursor?.release(error)
            cursor = nil
        }
    }
}

/// A stream's declared cursor, the operation it is (see ``RunningOperation``), and what gives its session back (also
/// when the stream is dropped unfinished).
final class OpenCursor: Sendable {
    let reader: CursorReader
    private let operation: RunningOperation?
    private let onRelease: @Sendable () -> Void
    private let rows = Atomic(0)

    init(reader: CursorReader, operation: RunningOperation?, onRelease: @escaping @Sendable () -> Void) {
        self.reader = reader
        self.operation = operation
        self.onRelease = onRelease
    }

    /// The next row's entity, counted.
    func next<E: EntityProtocol>(_ type: E.Type) async throws -> E? {
        let entity = try await reader.next(E.self)
        if entity != nil { rows.add(1, ordering: .relaxed) }
        return entity
    }

    func release(_ error: (any Error)?) {
        onRelease()
        operation?.end(rows: rows.load(ordering: .relaxed), error: error)
    }

    deinit { release(nil) }
}

extension DatabaseSession {
    /// Declares cursor `name` for the fetch `request` of `E` in the open transaction, and its reader.
    func openCursor<E: EntityProtocol>(
        _ type: E.Type, _ request: FetchRequest, name: String, ensureUsable: @escaping @Sendable () throws -> Void = {}
    ) async throws -> CursorReader {
        let (statement, description) = try await selectStatement(E.self, request)
        try await tagged(description) { try await declareCursor(name, for: statement) }
        return CursorReader(session: self, name: name, layout: RowLayout(description), ensureUsable: ensureUsable)
    }
}
