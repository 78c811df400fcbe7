import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// What the write layer keeps between calls: upsert statement texts by shape and the plans of single-row
/// upserts. Both are derived from the catalog, so a plan made from a table layout read before the latest
/// `forgetSchemaCache()` is not kept.
final class UpsertCache: Sendable {
    private let catalog: CatalogCache
    private let texts = Guarded<[UpsertShape: String]>([:])
    private let singleRowPlans = Guarded<[SingleRowUpsertPlan.Key: SingleRowUpsertPlan]>([:])

    /// How many statement texts, and how many single-row plans, are kept; beyond that the cache starts again.
    static let capacity = 512

    init(catalog: CatalogCache) { self.catalog = catalog }

    /// The SQL text of an upsert of this shape, built once (quoting and joining names is not free) from `schema`.
    func text(_ shape: UpsertShape, schema: TableSchema, build: () throws -> String) rethrows -> String {
        if let known = texts.withLock({ $0[shape] }) { return known }
        let text = try build()
        texts.withLock { texts in
            guard catalog.isCurrent(schema) else { return }
            if texts.count >= Self.capacity { texts.removeAll() }
            texts[shape] = text
        }
        return text
    }

    func singleRowPlan(_ key: SingleRowUpsertPlan.Key) -> SingleRowUpsertPlan? { singleRowPlans.withLock { $0[key] } }

    func store(_ plan: SingleRowUpsertPlan, for key: SingleRowUpsertPlan.Key) {
        singleRowPlans.withLock { plans in
            guard catalog.isCurrent(plan.description.schema) else { return }
            if plans.count >= Self.capacity, plans[key] == nil { plans.removeAll() }
            plans[key] = plan
        }
    }

    func forget() {
        texts.withLock { $0.removeAll() }
        singleRowPlans.withLock { $0.removeAll() }
    }
}

/// What an upsert's SQL text depends on: the entity, its encoded columns with their wire types, the conflict rule.
struct UpsertShape: Hashable, Sendable {
    struct Column: Hashable, Sendable {
        let name: String
        let wire: WireType
        let needsCast: Bool
    }

    let entity: ObjectIdentifier
    let columns: [Column]
    let conflict: UpsertOptions.Conflict
    let singleRow: Bool
    /// The statement returns each written row's place in the batch (see ``UpsertSQL/text(_:description:options:reportsRows:)``).
    var reportsRows = false
    /// For an entity with a version, the merge policy its statement applies (see ``VersionedUpsertSQL``).
    var mergePolicy: MergePolicy?
}
