import PostgresNIO

/// The models of a fetch, delivered one at a time as their rows arrive: memory stays flat whatever
/// the number of rows.
///
/// Iterating runs the query on one pooled connection, in a read-only transaction, through a server-side
/// cursor read in batches of bounded size (see ``CursorReader``); the connection is held until the sequence
/// ends, fails, or its iterator is dropped. Relationships are not loaded (slots stay unloaded). The rows come
/// from one snapshot, as with a single query.
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

    let runtime: ServiceRuntime
    let request: FetchRequest

    public func makeAsyncIterator() -> Iterator {
        Iterator(lease: StreamLease(runtime: runtime, request: request))
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let lease: StreamLease<Model.Entity>
        private var reader: CursorReader?
        private var finished = false

        init(lease: StreamLease<Model.Entity>) { self.lease = lease }

        public mutating func next() async throws -> Model? {
            guard !finished else { return nil }
            do {
                if reader == nil { reader = try await lease.open() }
                guard let entity = try await reader!.next(Model.Entity.self) else {
                    finish()
                    return nil
                }
                return try entity.toModel()
            } catch {
                finish()
                throw StructPostgresError.from(Task.isCancelled ? CancellationError() : error, sql: nil)
            }
        }

        /// Gives the connection back and drops the last batch, so that nothing of the result outlives the stream.
        private mutating func finish() {
            finished = true
            reader = nil
            lease.release()
        }
    }
}

/// Holds a pooled connection for a stream, from its first row until it ends or is dropped.
final class StreamLease<Entity: EntityProtocol>: Sendable {
    private let runtime: ServiceRuntime
    private let request: FetchRequest
    private let done = ReleaseSignal()

    init(runtime: ServiceRuntime, request: FetchRequest) {
        self.runtime = runtime
        self.request = request
    }

    deinit { done.signal() }

    func release() { done.signal() }

    /// Leases a connection in a task of its own, opens the cursor there and keeps the connection until
    /// released; the rows are read by the caller.
    func open() async throws -> CursorReader {
        let (runtime, request, done) = (self.runtime, self.request, self.done)
        let opened = AsyncThrowingStream<CursorReader, any Error>.makeStream()
        Task {
            do {
                try await runtime.withConnection { connection in
                    let session = DatabaseSession(connection: connection, runtime: runtime)
                    let (statement, description) = try await session.selectStatement(Entity.self, request)
                    try await session.execute(statement: "BEGIN READ ONLY")
                    do {
                        try await session.tagged(description) { try await session.declareCursor(CursorReader.name, for: statement) }
                        opened.continuation.yield(CursorReader(session: session, layout: RowLayout(description)))
                        opened.continuation.finish()
                    } catch {
                        await session.rollBack()
                        throw error
                    }
                    await done.wait()
                    // Closes the cursor; a connection lost or closed by a cancellation is dropped by the pool.
                    await session.rollBack()
                }
            } catch {
                opened.continuation.finish(throwing: error)
            }
        }
        var iterator = opened.stream.makeAsyncIterator()
        guard let reader = try await iterator.next() else {
            if Task.isCancelled { throw CancellationError() }
            throw StructPostgresError(.connectionLost, "the stream's connection closed before the query started")
        }
        return reader
    }
}
