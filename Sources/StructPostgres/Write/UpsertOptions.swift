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

    init(conflict: Conflict, coalesces: Bool? = nil) {
        self.conflict = conflict
        self.coalesces = coalesces
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
        UpsertOptions(conflict: conflict, coalesces: coalesces)
    }
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
        Self(inserted: lhs.inserted + rhs.inserted, updated: lhs.updated + rhs.updated, unchanged: lhs.unchanged + rhs.unchanged,
             skipped: lhs.skipped + rhs.skipped, merged: lhs.merged + rhs.merged,
             linked: lhs.linked + rhs.linked, unlinked: lhs.unlinked + rhs.unlinked,
             orphansDeleted: lhs.orphansDeleted + rhs.orphansDeleted)
    }
}

extension UpsertResult: RowCounting {
    var rowsCounted: Int { inserted + updated }
}
