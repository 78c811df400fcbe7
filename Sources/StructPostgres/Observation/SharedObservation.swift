import PostgresNIO
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// The observers of one query (same model, statement, bound values and loading): one subscription and one fetch
/// per change, whose result each observer receives. A hundred observers of one query cost one re-fetch, not a
/// hundred.
final class SharedObservation<Model: EntityConvertible>: Sendable {
    typealias Delivery = Result<[Model], StructPostgresError>

    private struct State {
        var members: [Int: AsyncStream<Delivery>.Continuation] = [:]
        var nextMember = 0
        var latest: Delivery?
        var loop: BackgroundTasks.Handle?
        /// Which loop runs: a loop that ends after a newer one started leaves the members alone.
        var generation = 0
    }

    private let state = Guarded(State())
    private let key: ObservationKey
    private let registry: ObservationRegistry

    init(key: ObservationKey, registry: ObservationRegistry) {
        self.key = key
        self.registry = registry
    }

    /// Adds an observer: its stream starts with the latest result when there is one; the first observer starts the
    /// shared loop.
    func join(_ path: OperationPath, _ request: FetchRequest, loading: Loading) -> (id: Int, results: AsyncStream<Delivery>) {
        let (results, continuation) = AsyncStream<Delivery>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> Int in
            state.nextMember += 1
            state.members[state.nextMember] = continuation
            if let latest = state.latest { continuation.yield(latest) }
            if state.loop == nil {
                state.generation += 1
                let generation = state.generation
                state.loop = path.runtime.background.startCancellable { await self.run(path, request, loading: loading, generation) }
                if state.loop == nil {
                    continuation.yield(.failure(ChangeListener.stoppedError))
                    continuation.finish()
                }
            }
            return state.nextMember
        }
        return (id, results)
    }

    /// Removes an observer; the last one stops the loop and its listening.
    func leave(_ id: Int) {
        let loop = state.withLock { state -> BackgroundTasks.Handle? in
            state.members.removeValue(forKey: id)?.finish()
            guard state.members.isEmpty else { return nil }
            defer { state.loop = nil }
            return state.loop
        }
        if let loop {
            registry.remove(key, self)
            loop.cancel()
        }
    }

    /// Subscribes, fetches, and fetches again after each change until cancelled, failed, or the service stops; then
    /// ends every member's stream.
    private func run(_ path: OperationPath, _ request: FetchRequest, loading: Loading, _ generation: Int) async {
        defer { end(generation) }
        do {
            let keys = (request.filter?.keys ?? []) + request.sort.map(\.key)
            let subscription = try await ObservationSubscription(path, Model.Entity.self, loading: loading, keys: keys)
            while !Task.isCancelled {
                publish(.success(try await path.fetch(Model.self, request, loading: loading)))
                guard try await subscription.signal.wait() else { return }
                // The other notifications of the same commit arrive right behind the first: let them in, then fetch once.
                await Task.yield()
                subscription.signal.clear()
            }
        } catch {
            if Task.isCancelled { return }
            publish(.failure(StructPostgresError.from(error, sql: nil)))
        }
    }

    /// The loop ended: later observers of the query start a new one, and every member's stream ends.
    private func end(_ generation: Int) {
        let members = state.withLock { state -> [AsyncStream<Delivery>.Continuation]? in
            guard state.generation == generation, state.loop != nil else { return nil }
            defer {
                state.members = [:]
                state.loop = nil
                state.latest = nil
            }
            return Array(state.members.values)
        }
        guard let members else { return }
        registry.remove(key, self)
        for member in members { member.finish() }
    }

    private func publish(_ delivery: Delivery) {
        let members = state.withLock { state -> [AsyncStream<Delivery>.Continuation] in
            state.latest = delivery
            return Array(state.members.values)
        }
        for member in members { member.yield(delivery) }
    }
}

/// What makes two observations the same query.
struct ObservationKey: Hashable, Sendable {
    let model: ObjectIdentifier
    let sql: String
    let bindings: PostgresBindings
    let loading: Loading

    /// The key of a fetch of `E`: its statement as the read layer builds it.
    static func of<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest, loading: Loading, on path: OperationPath) async throws
        -> Self
    {
        let statement = try await path.perform(Operation(.lookup, E.self)) { try await $0.selectStatement(E.self, request).0 }
        return Self(
            model: ObjectIdentifier(E.self), sql: statement.sql, bindings: statement.bindings,
            loading: loading.resolved(path.runtime.defaultLoading))
    }
}

/// The shared observations of one service, by query.
final class ObservationRegistry: Sendable {
    private let observations = Guarded<[ObservationKey: any AnyObject & Sendable]>([:])

    /// The shared observation of `key`, made when it is the first.
    func observation<Model: EntityConvertible>(_ key: ObservationKey, of type: Model.Type) -> SharedObservation<Model> {
        observations.withLock { observations in
            if let known = observations[key] as? SharedObservation<Model> { return known }
            let made = SharedObservation<Model>(key: key, registry: self)
            observations[key] = made
            return made
        }
    }

    /// Forgets `observation` if it is still the one registered for `key`.
    func remove(_ key: ObservationKey, _ observation: AnyObject) {
        observations.withLock { observations in
            if observations[key] === observation { observations[key] = nil }
        }
    }
}
