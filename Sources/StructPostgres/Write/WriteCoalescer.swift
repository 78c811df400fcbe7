import Synchronization

/// A service's coalesced single-row upserts: one ``CoalescingLane`` per entity type and conflict rule.
final class WriteCoalescer: Sendable {
    /// What calls coalesce with when the service's configuration names no ``WriteCoalescing``.
    let settings: WriteCoalescing
    /// Whether calls coalesce unless their options say otherwise.
    let byDefault: Bool
    private let lanes = Guarded<[SingleRowUpsertPlan.Key: any Sendable]>([:])
    private let background: BackgroundTasks

    init(configured: WriteCoalescing?, background: BackgroundTasks) {
        self.background = background
        var settings = configured ?? WriteCoalescing()
        settings.maxBatch = min(settings.maxBatch, WritePlan.rowsPerStatement)
        self.settings = settings
        byDefault = configured != nil
    }

    /// Whether a call with `options` is coalesced.
    func applies(to options: UpsertOptions) -> Bool { options.coalesces ?? byDefault }

    func lane<E: EntityProtocol>(_ type: E.Type, _ options: UpsertOptions) -> CoalescingLane<E> {
        let key = SingleRowUpsertPlan.Key(entity: ObjectIdentifier(E.self), conflict: options.conflict)
        return lanes.withLock { lanes in
            if let lane = lanes[key] as? CoalescingLane<E> { return lane }
            let lane = CoalescingLane<E>(settings: settings, background: background)
            lanes[key] = lane
            return lane
        }
    }
}
