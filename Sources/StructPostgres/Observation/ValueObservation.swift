import StructPostgresCore
import StructPostgresDriver

/// A value read from the database, read again after every committed change of the tables it is read from: a
/// dashboard's figure, a count, a page. The current value first, then a fresh one after each transaction that
/// changed one of the tables; a burst of commits costs a few reads, and the last value is always the final state.
/// Each iterator reads on its own (values are not shared between observers, as ``ModelObservation``'s results are).
///
/// The tables need the triggers of ``ChangeNotifications``. The sequence ends when the consuming task is
/// cancelled or the service stops; an error of the read ends it with that error.
///
/// ```swift
/// for try await rating in service.observe(changesOf: ReviewModel.self, read: { db in
///     try await db.average(\ReviewModel.stars, of: ReviewModel.self, where: .equal("bookID", bookID))
/// }) {
///     print(rating ?? 0)
/// }
/// ```
public struct ValueObservation<Value: Sendable>: AsyncSequence, Sendable {
    /// One value the read returned.
    public typealias Element = Value

    let path: OperationPath
    /// The tables whose changes trigger a new read, and the entity to name in an error about them.
    let tables: [String]
    let entity: String
    let read: @Sendable () async throws -> Value

    /// An iterator that starts observing at its first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(observation: self) }

    /// The values of one observer; it stops reading when it ends or is released.
    public struct Iterator: AsyncIteratorProtocol {
        private let observation: ValueObservation
        private var loop: Membership?
        private var values: AsyncStream<Result<Value, StructPostgresError>>.Iterator?
        private var finished = false

        init(observation: ValueObservation) { self.observation = observation }

        /// The next value, the current one first; `nil` when the sequence ends, or the error that ended it.
        public mutating func next() async throws -> Value? {
            guard !finished else { return nil }
            if values == nil {
                let (stream, continuation) = AsyncStream<Result<Value, StructPostgresError>>.makeStream(
                    bufferingPolicy: .bufferingNewest(1))
                let observation = self.observation
                guard let handle = observation.path.runtime.background.startCancellable({ await observation.run(continuation) }) else {
                    finished = true
                    throw ChangeListener.stoppedError
                }
                loop = Membership { handle.cancel() }
                values = stream.makeAsyncIterator()
            }
            switch await values!.next(isolation: #isolation) {
            case .success(let value)?:
                return value
            case .failure(let error)?:
                end()
                throw error
            case nil:
                end()
                return nil
            }
        }

        private mutating func end() {
            finished = true
            values = nil
            loop = nil
        }
    }

    /// Subscribes to the tables, reads, and reads again after each change until cancelled, failed, or the service
    /// stops; then ends the stream.
    private func run(_ continuation: AsyncStream<Result<Value, StructPostgresError>>.Continuation) async {
        defer { continuation.finish() }
        do {
            let subscription = try await ObservationSubscription(path, tables: tables, entity: entity)
            while !Task.isCancelled {
                continuation.yield(.success(try await read()))
                guard try await subscription.signal.wait() else { return }
                // The other notifications of the same commit arrive right behind the first: let them in, then read once.
                await Task.yield()
                subscription.signal.clear()
            }
        } catch {
            if Task.isCancelled { return }
            continuation.yield(.failure(StructPostgresError.from(error, sql: nil)))
        }
    }
}
