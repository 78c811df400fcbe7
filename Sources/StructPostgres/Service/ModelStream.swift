import PostgresNIO
import Synchronization

/// The models of a fetch, delivered one at a time as their rows arrive: memory stays flat whatever
/// the number of rows, since PostgresNIO reads ahead only a bounded number of rows.
///
/// Iterating runs one query on one pooled connection, held until the sequence ends, fails, or its
/// iterator is dropped. Relationships are not loaded (slots stay unloaded).
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
        private var reader: RowReader?
        private var finished = false

        init(lease: StreamLease<Model.Entity>) { self.lease = lease }

        public mutating func next() async throws -> Model? {
            guard !finished else { return nil }
            do {
                if reader == nil {
                    let (sequence, layout) = try await lease.open()
                    reader = RowReader(rows: sequence.makeAsyncIterator(), decoder: RowDecoder(layout: layout))
                }
                let reader = self.reader!
                guard let row = try await reader.next() else {
                    finish()
                    return nil
                }
                reader.decoder.replaceRows(with: row)
                return try DatabaseSession.decode(Model.Entity.self, row: 0, reader.decoder).toModel()
            } catch {
                finish()
                throw StructPostgresError.from(Task.isCancelled ? CancellationError() : error, sql: nil)
            }
        }

        /// Gives the connection back and drops the last row, so that nothing of the result outlives the stream.
        private mutating func finish() {
            finished = true
            reader = nil
            lease.release()
        }
    }
}

/// A stream's row iterator and decoder, in a class so that reading a row does not copy the iterator.
private final class RowReader {
    // Only the stream's iterator ever touches it; PostgresNIO's next() is merely not annotated.
    nonisolated(unsafe) private var rows: RowSequence.AsyncIterator
    let decoder: RowDecoder

    init(rows: RowSequence.AsyncIterator, decoder: RowDecoder) {
        self.rows = rows
        self.decoder = decoder
    }

    func next() async throws -> PostgresRow? { try await rows.next() }
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

    /// Leases a connection in a task of its own and starts the query there; the rows are read by the caller.
    func open() async throws -> (RowSequence, RowLayout) {
        let (runtime, request, done) = (self.runtime, self.request, self.done)
        let opened = AsyncThrowingStream<(RowSequence, RowLayout), any Error>.makeStream()
        Task {
            do {
                try await runtime.withConnection { connection in
                    let session = DatabaseSession(connection: connection, runtime: runtime)
                    let (statement, description) = try await session.selectStatement(Entity.self, request)
                    let rows: RowSequence
                    do {
                        rows = try await session.stream(statement)
                    } catch let error as StructPostgresError {
                        throw error.with(entity: description.entity, table: description.schema.table)
                    }
                    opened.continuation.yield((rows, RowLayout(description)))
                    opened.continuation.finish()
                    await done.wait()
                }
            } catch {
                opened.continuation.finish(throwing: error)
            }
        }
        var iterator = opened.stream.makeAsyncIterator()
        guard let result = try await iterator.next() else {
            if Task.isCancelled { throw CancellationError() }
            throw StructPostgresError(.connectionLost, "the stream's connection closed before the query started")
        }
        return result
    }
}
