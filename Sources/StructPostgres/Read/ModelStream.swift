import PostgresNIO

/// The models of a fetch, delivered one at a time as their rows arrive: memory stays flat whatever
/// the number of rows.
///
/// Iterating runs the query through a server-side cursor read in batches of bounded size (see
/// ``CursorReader``). From the service, the cursor lives on one pooled connection in a read-only transaction,
/// held until the sequence ends, fails, or its iterator is dropped; the rows come from one snapshot, as with a
/// single query. From a transaction, the cursor is declared in that transaction and closes with it: iterate it
/// inside the transaction's closure. Relationships are not loaded (slots stay unloaded).
///
/// A lost connection ends the loop with ``StructPostgresError/Code-swift.struct/connectionLost``; a cancelled
/// task ends it with ``StructPostgresError/Code-swift.struct/queryCancelled``, and the server stops the query.
///
/// ```swift
/// for try await review in service.stream(ReviewModel.self, sortedBy: [.ascending("createdAt")]) {
///     try await archive.append(review)
/// }
/// ```
public struct ModelStream<Model: EntityConvertible>: AsyncSequence, Sendable {
    public typealias Element = Model

    /// Declares the cursor where the stream runs: given by the operations layer.
    let open: @Sendable () async throws -> OpenCursor

    public func makeAsyncIterator() -> Iterator { Iterator(open: open) }

    public struct Iterator: AsyncIteratorProtocol {
        private let open: @Sendable () async throws -> OpenCursor
        private var cursor: OpenCursor?
        private var finished = false

        init(open: @escaping @Sendable () async throws -> OpenCursor) { self.open = open }

        public mutating func next() async throws -> Model? {
            guard !finished else { return nil }
            do {
                if cursor == nil { cursor = try await open() }
                guard let entity = try await cursor!.reader.next(Model.Entity.self) else {
                    finish()
                    return nil
                }
                return try entity.toModel()
            } catch {
                finish()
                throw StructPostgresError.from(Task.isCancelled ? CancellationError() : error, sql: nil)
            }
        }

        /// Gives the session back and drops the last batch, so that nothing of the result outlives the stream.
        private mutating func finish() {
            finished = true
            cursor?.release()
            cursor = nil
        }
    }
}

/// A stream's declared cursor, and what gives its session back (also when the stream is dropped unfinished).
final class OpenCursor: Sendable {
    let reader: CursorReader
    private let onRelease: @Sendable () -> Void

    init(reader: CursorReader, onRelease: @escaping @Sendable () -> Void) {
        self.reader = reader
        self.onRelease = onRelease
    }

    func release() { onRelease() }

    deinit { onRelease() }
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
