import StructPostgresCore
import StructPostgresDriver

/// What an upsert does when a row with the same unique key already exists.
public struct UpsertOptions: Sendable, Equatable {
    enum Conflict: Sendable, Hashable {
        case updateAll
        case update([String])
        case ignore
    }
    let conflict: Conflict
    /// Whether the call may be coalesced with concurrent ones (see ``WriteCoalescing``); `nil`: as the service's
    /// ``PostgresConfiguration/coalescing`` says.
    let coalesces: Bool?
    /// What a conflict with a stored version does (see ``MergePolicy``); `nil`: as the service's
    /// ``PostgresConfiguration/mergePolicy`` says.
    let mergePolicy: MergePolicy?

    init(conflict: Conflict, coalesces: Bool? = nil, mergePolicy: MergePolicy? = nil) {
        self.conflict = conflict
        self.coalesces = coalesces
        self.mergePolicy = mergePolicy
    }

    /// Insert new rows, update every column of existing ones (`ON CONFLICT DO UPDATE`). The default.
    public static let upsert = UpsertOptions(conflict: .updateAll)
    /// Insert new rows, leave existing ones untouched (`ON CONFLICT DO NOTHING`).
    public static let insertIfAbsent = UpsertOptions(conflict: .ignore)
    /// Insert new rows; of existing ones, update only these properties or columns.
    public static func updating(_ keys: [String]) -> UpsertOptions { UpsertOptions(conflict: .update(keys)) }
    /// Insert new rows; of existing ones, update only these properties or columns.
    public static func updating(_ keys: String...) -> UpsertOptions { updating(keys) }

    /// The same options, with this call coalesced with concurrent single-row upserts (`true`) or sent on its
    /// own (`false`) whatever the service's ``PostgresConfiguration/coalescing`` says.
    ///
    /// ```swift
    /// try await service.update(entities: [review], options: .upsert.coalesced())
    /// ```
    public func coalesced(_ coalesces: Bool = true) -> UpsertOptions {
        UpsertOptions(conflict: conflict, coalesces: coalesces, mergePolicy: mergePolicy)
    }

    /// The same options, with `policy` deciding what this call does with rows of a model with a version that changed
    /// since they were read, whatever the service's ``PostgresConfiguration/mergePolicy`` says.
    ///
    /// ```swift
    /// let result = try await service.update(entities: books, options: .upsert.merging(.rollback))
    /// for conflict in result.conflicts { print("kept as stored:", conflict) }
    /// ```
    public func merging(_ policy: MergePolicy) -> UpsertOptions {
        UpsertOptions(conflict: conflict, coalesces: coalesces, mergePolicy: policy)
    }

    /// These options with the merge policy settled: the call's own, else `configured`.
    func resolvingMergePolicy(_ configured: MergePolicy) -> UpsertOptions {
        mergePolicy == nil ? merging(configured) : self
    }

    /// The policy a coalesced batch of an entity with a version is written with: ``MergePolicy/rollback`` for calls
    /// under ``MergePolicy/error`` too (each caller then turns its own conflicts into its error, so that one stale
    /// caller fails no other), ``MergePolicy/overwrite`` for calls under it.
    var coalescedMergePolicy: MergePolicy { mergePolicy == .overwrite ? .overwrite : .rollback }
}

/// What an upsert did.
public struct UpsertResult: Sendable, Equatable {
    /// Rows that did not exist before.
    public var inserted = 0
    /// Existing rows that were updated: at least one written column held another value.
    public var updated = 0
    /// Existing rows whose stored values already equal the written ones (by each column type's `=`): left as
    /// they were, so that writing the same data again costs no new row versions.
    public var unchanged = 0
    /// Existing rows left untouched (``UpsertOptions/insertIfAbsent``).
    public var skipped = 0
    /// Entities dropped because a later one in the same batch had the same unique key
    /// (an entity reached twice through a graph counts here too).
    public var merged = 0
    /// Join rows added by assigned to-many sets.
    public var linked = 0
    /// Join rows removed by assigned to-many sets.
    public var unlinked = 0
    /// Children deleted because they left their last set (``RemovalRule/deleteOrphans``).
    public var orphansDeleted = 0
    /// Rows of a model with a version left as stored, because they changed since they were read
    /// (``MergePolicy/rollback``); every such row by its unique key, with the version the call had and the one stored.
    public var conflicts: [VersionConflict] = []
    /// The version each row of a model with a version holds after the call (see ``version(of:)``).
    var versions = WrittenVersions()

    /// A result with the given counts; each defaults to 0.
    public init(
        inserted: Int = 0, updated: Int = 0, unchanged: Int = 0, skipped: Int = 0, merged: Int = 0,
        linked: Int = 0, unlinked: Int = 0, orphansDeleted: Int = 0
    ) {
        self.inserted = inserted
        self.updated = updated
        self.unchanged = unchanged
        self.skipped = skipped
        self.merged = merged
        self.linked = linked
        self.unlinked = unlinked
        self.orphansDeleted = orphansDeleted
    }

    static func + (lhs: Self, rhs: Self) -> Self {
        Self(
            inserted: lhs.inserted + rhs.inserted, updated: lhs.updated + rhs.updated, unchanged: lhs.unchanged + rhs.unchanged,
            skipped: lhs.skipped + rhs.skipped, merged: lhs.merged + rhs.merged,
            linked: lhs.linked + rhs.linked, unlinked: lhs.unlinked + rhs.unlinked,
            orphansDeleted: lhs.orphansDeleted + rhs.orphansDeleted, conflicts: lhs.conflicts + rhs.conflicts,
            versions: lhs.versions + rhs.versions)
    }

    private init(
        inserted: Int, updated: Int, unchanged: Int, skipped: Int, merged: Int, linked: Int, unlinked: Int, orphansDeleted: Int,
        conflicts: [VersionConflict], versions: WrittenVersions
    ) {
        self.init(
            inserted: inserted, updated: updated, unchanged: unchanged, skipped: skipped, merged: merged, linked: linked,
            unlinked: unlinked, orphansDeleted: orphansDeleted)
        self.conflicts = conflicts
        self.versions = versions
    }
}

extension UpsertResult: RowCounting {
    package var rowsCounted: Int { inserted + updated }
}
