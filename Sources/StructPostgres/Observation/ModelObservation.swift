import StructPostgresCore
import StructPostgresDriver

/// The result of a fetch, again after every committed change of a table it reads: the current result first, then
/// a fresh one after each transaction that changed the model's table or a loaded relationship's.
///
/// Notifications come from the triggers of ``ChangeNotifications`` over the service's one listening connection.
/// While a fetch runs, further changes are coalesced into one more fetch, so a burst of commits causes a few
/// fetches, and the last result is always the final state. After a lost listening connection the service
/// reconnects and fetches again (a change made meanwhile is not missed); the error reaches the loop only when
/// reconnecting gives up. Cancelling the consuming task ends the sequence and stops listening on channels
/// nobody else observes. The sequence ends when the service stops (its `run()` returns).
///
/// ```swift
/// for try await reviews in service.observe(ReviewModel.self, where: \.bookID == book.uuid,
///                                          sortedBy: [.descending("createdAt")]) {
///     show(reviews)
/// }
/// ```
public struct ModelObservation<Model: EntityConvertible>: AsyncSequence, Sendable {
    /// One result: the models the fetch returns.
    public typealias Element = [Model]

    let path: OperationPath
    let registry: ObservationRegistry
    let request: FetchRequest
    let loading: Loading

    /// An iterator that starts observing at its first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(observation: self) }

    /// The results of one observer; it leaves the shared observation when it ends or is released.
    public struct Iterator: AsyncIteratorProtocol {
        private let observation: ModelObservation
        private var membership: Membership?
        private var results: AsyncStream<SharedObservation<Model>.Delivery>.Iterator?
        private var finished = false

        init(observation: ModelObservation) { self.observation = observation }

        /// The next result, the current one first; `nil` when the sequence ends (the service stops, the task is
        /// cancelled), or the error that ended it.
        public mutating func next() async throws -> [Model]? {
            guard !finished else { return nil }
            if results == nil {
                do {
                    let key = try await ObservationKey.of(
                        Model.Entity.self, observation.request, loading: observation.loading, on: observation.path)
                    let shared = observation.registry.observation(key, of: Model.self)
                    let (id, stream) = shared.join(observation.path, observation.request, loading: observation.loading)
                    membership = Membership { shared.leave(id) }
                    results = stream.makeAsyncIterator()
                } catch {
                    finished = true
                    if Task.isCancelled { return nil }
                    throw error
                }
            }
            switch await results!.next(isolation: #isolation) {
            case .success(let models)?:
                return models
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
            results = nil
            membership = nil
        }
    }
}

/// An observer's place in a shared observation, left when released.
final class Membership: Sendable {
    private let leave: @Sendable () -> Void
    init(leave: @escaping @Sendable () -> Void) { self.leave = leave }
    deinit { leave() }
}

extension ModelObservation where Model: Equatable {
    /// The same results, without one equal to the result before it.
    ///
    /// ```swift
    /// for try await books in service.observe(BookModel.self, loading: .none).removingDuplicates() { print(books.count) }
    /// ```
    public func removingDuplicates() -> DistinctResults<Model> { DistinctResults(observation: self) }
}

/// The results of an observation, each different from the one before it.
public struct DistinctResults<Model: EntityConvertible & Equatable>: AsyncSequence, Sendable {
    /// One result, different from the one before it.
    public typealias Element = [Model]
    let observation: ModelObservation<Model>

    /// An iterator over the observation's results that skips repeats.
    public func makeAsyncIterator() -> Iterator { Iterator(base: observation.makeAsyncIterator()) }

    /// Iterates the observation's results, skipping each one equal to the one before it.
    public struct Iterator: AsyncIteratorProtocol {
        var base: ModelObservation<Model>.Iterator
        var last: [Model]?

        /// The next result that differs from the one before it; `nil` when the observation ends.
        public mutating func next() async throws -> [Model]? {
            while let result = try await base.next() {
                if result != last {
                    last = result
                    return result
                }
            }
            return nil
        }
    }
}

/// An observer's subscription to the channels of the tables it reads; unsubscribed when released.
final class ObservationSubscription: Sendable {
    let signal = ChangeSignal()
    private let listener: ChangeListener
    private let id: Int

    convenience init<E: EntityProtocol>(_ path: OperationPath, _ type: E.Type, loading: Loading, keys: [String]) async throws {
        let tables = ObservedTables.of(TargetInfo(E.self), loading: loading.resolved(path.runtime.defaultLoading), keys: keys)
        try await self.init(path, tables: tables, entity: "\(E.self)")
    }

    /// A subscription to the channels of `tables`; `entity` is named in an error about them.
    init(_ path: OperationPath, tables: [String], entity: String) async throws {
        let channels = try await path.perform(Operation(.lookup)) { try await $0.notificationChannels(tables, entity: entity) }
        listener = path.runtime.listener
        let signal = self.signal
        id = try await listener.subscribe(Set(channels.keys)) { event in
            switch event {
            case .notification, .resumed: signal.notify()
            case .failed(let error): signal.fail(error)
            case .finished: signal.finish()
            }
        }
    }

    deinit { listener.unsubscribe(id) }
}
