import StructPostgresCore
import StructPostgresDriver

/// A service's coalescing lanes (see ``CoalescingLane``), one per kind of call, entity type and shape: concurrent
/// single-row upserts and deletes (``WriteCoalescing``) and point reads (``ReadCoalescing``), each kind on by
/// default and turned off by a `nil` configuration.
final class Coalescer: Sendable {
    /// What a lane's calls share.
    struct Key: Hashable, Sendable {
        enum Kind: Hashable, Sendable {
            /// Upserts with one conflict rule and, for an entity with a version, the merge policy its batches are
            /// written with (``UpsertOptions/coalescedMergePolicy``).
            case upsert(UpsertOptions.Conflict, MergePolicy?)
            case delete
            /// A point read of one shape (see ``ReadCoalescing``).
            case read(PointReadShape)
        }
        let kind: Kind
        let entity: ObjectIdentifier
    }

    /// How writes coalesce when a call's options say they do.
    let writeSettings: WriteCoalescing
    /// Whether writes coalesce unless their options say otherwise.
    let writesByDefault: Bool
    /// How point reads coalesce; `nil`: they do not.
    let reads: ReadCoalescing?
    /// Each key's lane has one type: a kind of call and an entity type decide its input and output (an entity, a
    /// point read's key; its outcome, a count or entities), so a lane is taken back without a dynamic cast.
    private let lanes = Guarded<[Key: any AnyObject & Sendable]>([:])
    /// The point reads' plans: what their first call worked out, for the next ones.
    let plans = PointReadPlans()
    private let background: BackgroundTasks

    init(writes: WriteCoalescing?, reads: ReadCoalescing?, background: BackgroundTasks) {
        self.background = background
        var settings = writes ?? WriteCoalescing()
        settings.maxBatch = min(settings.maxBatch, WritePlan.rowsPerStatement)
        writeSettings = settings
        writesByDefault = writes != nil
        self.reads = reads
    }

    /// Whether an upsert with `options` is coalesced: not under a deadline of the call's own
    /// (``PostgresService/withTimeout(_:_:)``), which its batch, run in a task of the lane's, would not keep.
    func applies(to options: UpsertOptions) -> Bool { (options.coalesces ?? writesByDefault) && CallDeadline.current == nil }

    /// Whether a single-row delete is coalesced: by default, and not under a deadline of the call's own.
    var deletesApply: Bool { writesByDefault && CallDeadline.current == nil }

    /// Whether a point read is coalesced: with ``reads`` set, and not under a deadline of the call's own.
    var readsApply: Bool { reads != nil && CallDeadline.current == nil }

    /// The lane of `key`, made on first use; its calls are told `withdrawn` when cancelled while they wait.
    func lane<Input: Sendable, Output: Sendable>(_ key: Key, withdrawn: String) -> CoalescingLane<Input, Output> {
        if let lane = lanes.withLock({ $0[key] }) { return unsafeDowncast(lane, to: CoalescingLane<Input, Output>.self) }
        return lanes.withLock { lanes in
            if let lane = lanes[key] { return unsafeDowncast(lane, to: CoalescingLane<Input, Output>.self) }
            let (window, maxBatch) =
                if case .read = key.kind, let reads { (reads.window, reads.maxBatch) } else {
                    (writeSettings.window, writeSettings.maxBatch)
                }
            let lane = CoalescingLane<Input, Output>(window: window, maxBatch: maxBatch, background: background, withdrawn: withdrawn)
            lanes[key] = lane
            return lane
        }
    }

    /// The lane of single-row upserts of `E` with `options`' conflict rule and (for an entity with a version) merge
    /// policy: calls under ``MergePolicy/error`` and ``MergePolicy/rollback`` share one, whose batches keep what is
    /// stored; those under ``MergePolicy/overwrite`` another.
    func lane<E: EntityProtocol>(_ type: E.Type, _ options: UpsertOptions) -> CoalescingLane<E, UpsertResult> {
        let policy = E.versionKey == nil ? nil : options.coalescedMergePolicy
        return lane(
            .init(kind: .upsert(options.conflict, policy), entity: ObjectIdentifier(E.self)),
            withdrawn: "the task was cancelled while its upsert waited to be coalesced; its row was not sent")
    }

    /// The lane of single-row deletes of `E` (unconditional ones: see ``OperationPath/delete(_:policy:)``).
    func deleteLane<E: EntityProtocol>(_ type: E.Type) -> CoalescingLane<E, Int> {
        lane(
            .init(kind: .delete, entity: ObjectIdentifier(E.self)),
            withdrawn: "the task was cancelled while its delete waited to be coalesced; its row was not deleted")
    }
}
