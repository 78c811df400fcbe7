import StructPostgresCore
import StructPostgresDriver

/// What a point read (``SelectShape/pointValue``) worked out the first time, kept for the next ones of the same
/// request: its shape, its lane and its text. A service sends the same few point reads again and again; the next
/// one with another key compares its request with a kept one instead of working out its shape, hashing it for its
/// lane and hashing it again for its text.
final class PointReadPlan: Sendable {
    /// The description the shape was worked out from: a plan is not taken after the table's layout was read again.
    let description: EntityDescription
    /// The request the plan was made for: the key and options of its one equality, its sort and limit.
    let key: String
    let options: Filter.Options
    let sort: [SortKey]
    let limit: Int?
    let loading: Loading
    let onPrimary: Bool
    /// The shape, with the value of the call it was made for.
    let shape: SelectShape
    /// The lane, a `CoalescingLane<PointCall, [E]>` of the plan's entity type.
    let lane: any AnyObject & Sendable
    /// The text, once a fetch found it built.
    let template = SelectTemplates.Slot()

    init(
        description: EntityDescription, key: String, options: Filter.Options, request: FetchRequest, loading: Loading,
        onPrimary: Bool, shape: SelectShape, lane: any AnyObject & Sendable
    ) {
        self.description = description
        self.key = key
        self.options = options
        sort = request.sort
        limit = request.limit
        self.loading = loading
        self.onPrimary = onPrimary
        self.shape = shape
        self.lane = lane
    }

    /// Whether `request`, whose filter is one equality of `key` with `options`, is this plan's request with another
    /// value.
    func matches(
        _ request: FetchRequest, key: String, options: Filter.Options, loading: Loading, onPrimary: Bool,
        description: EntityDescription
    ) -> Bool {
        self.description === description && request.offset == nil && self.key == key && self.options == options
            && limit == request.limit && self.onPrimary == onPrimary && sort == request.sort && self.loading == loading
    }
}

/// The point-read plans of a service, a few per entity type (the most recent ones).
final class PointReadPlans: Sendable {
    /// Plans kept per entity type; a further one replaces the oldest.
    static let perEntity = 4

    private let plans = Guarded<[ObjectIdentifier: [PointReadPlan]]>([:])

    /// The kept plans of an entity type, newest first.
    func plans(_ entity: ObjectIdentifier) -> [PointReadPlan] { plans.withLock { $0[entity] ?? [] } }

    func keep(_ plan: PointReadPlan, for entity: ObjectIdentifier) {
        plans.withLock { plans in
            var kept = plans[entity] ?? []
            // Plans of a layout read since are dropped with the oldest.
            kept.removeAll { $0.description !== plan.description }
            kept.insert(plan, at: 0)
            if kept.count > Self.perEntity { kept.removeLast(kept.count - Self.perEntity) }
            plans[entity] = kept
        }
    }
}
