import StructPostgresCore
import StructPostgresDriver

/// What the point reads of a lane share besides their entity type: the shape of their text, what they load and
/// where they run.
struct PointReadShape: Hashable, Sendable {
    let shape: SelectTemplates.Shape
    let loading: Loading
    let onPrimary: Bool
}

/// Point reads gathered (see ``ReadCoalescing``).
extension OperationPath {
    /// One call of a lane of point reads: its key, and its own request (run alone when its batch fails).
    struct PointCall: Sendable {
        let value: ColumnValue
        let request: FetchRequest
    }

    struct PointRead<E: EntityProtocol> {
        let call: PointCall
        let loading: Loading
        let lane: CoalescingLane<PointCall, [E]>
        /// The request's shape, for its fetch when it runs alone.
        let known: KnownShape
    }

    /// The lane of `request` when it is a point read (``SelectShape/pointValue``) of an entity whose table layout
    /// the service knows already (the first fetch of a type reads it, alone). A request that a kept plan
    /// (``PointReadPlan``) was made for, with another value, takes the plan's shape, lane and text.
    func pointRead<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest, _ loading: Loading, _ operation: Operation) -> PointRead<E>?
    {
        let entity = ObjectIdentifier(E.self)
        guard let description = runtime.sessions.catalog.description(entity),
            case .compare(let key, .equal, let value, let options)? = request.filter?.node
        else { return nil }
        let onPrimary = if case .primary = route(operation) { true } else { false }
        let plans = runtime.coalescer.plans
        // Plans of one request with keys of other wire types (a Double and an Int on a float column) are kept side
        // by side: a value that does not fit one plan tries the next.
        for plan in plans.plans(entity)
        where plan.matches(request, key: key, options: options, loading: loading, onPrimary: onPrimary, description: description) {
            guard let shape = plan.shape.withPointValue(value), let value = shape.pointValue else { continue }
            return PointRead(
                call: PointCall(value: value, request: request), loading: loading,
                lane: unsafeDowncast(plan.lane, to: CoalescingLane<PointCall, [E]>.self),
                known: KnownShape(shape: shape, description: description, template: plan.template))
        }
        guard let shape = SelectShape(request, entity: entity, description: description), let value = shape.pointValue else { return nil }
        let laneKey = Coalescer.Key(kind: .read(PointReadShape(shape: shape.shape, loading: loading, onPrimary: onPrimary)), entity: entity)
        let lane: CoalescingLane<PointCall, [E]> = runtime.coalescer.lane(
            laneKey, withdrawn: "the task was cancelled while its fetch waited to be coalesced; it was not sent")
        let plan = PointReadPlan(
            description: description, key: key, options: options, request: request, loading: loading, onPrimary: onPrimary, shape: shape,
            lane: lane)
        plans.keep(plan, for: entity)
        return PointRead(
            call: PointCall(value: value, request: request), loading: loading, lane: lane,
            known: KnownShape(shape: shape, description: description, template: plan.template))
    }

    /// Fetches with the concurrent point reads of its lane: one statement for their distinct keys; a batch that
    /// fails runs each of its calls alone, so that an error reaches only the calls it concerns.
    func coalescedFetch<Model: EntityConvertible>(_ type: Model.Type, _ point: PointRead<Model.Entity>, _ operation: Operation) async throws
        -> [Model]
    {
        let loading = point.loading
        let entities = try await runtime.telemetry.measure(operation) { span in
            let instruments = runtime.telemetry.inherited()
            return try await point.lane.submit(point.call) { calls in
                do {
                    return try await instruments.bound {
                        var places: [ColumnValue: Int] = [:]
                        var keys: [ColumnValue] = []
                        for call in calls where places[call.value] == nil {
                            places[call.value] = keys.count
                            keys.append(call.value)
                        }
                        let found = try await session(for: operation, span) { session in
                            try await session.fetchPoints(Model.Entity.self, calls[0].request, keys: keys, loading: loading)
                        }
                        return calls.map { .success(found[places[$0.value]!]) }
                    }
                } catch {
                    var outcomes: [Result<[Model.Entity], any Error>] = []
                    for call in calls {
                        do {
                            outcomes.append(
                                .success(
                                    try await instruments.bound {
                                        try await session(for: operation, span) {
                                            try await $0.fetchGraph(Model.Entity.self, call.request, loading: loading)
                                        }
                                    }))
                        } catch {
                            outcomes.append(.failure(error))
                        }
                    }
                    return outcomes
                }
            }
        }
        return try entities.models()
    }
}
