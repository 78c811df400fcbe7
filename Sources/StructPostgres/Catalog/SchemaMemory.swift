import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// What a service derives from the schema: the table layouts and entity descriptions read from the catalog, and the
/// fetch statements' texts built from them. Kept by the service's ``SessionContext``.
final class SchemaMemory: SchemaDerivedCaches {
    let catalog = CatalogCache()
    let selects: SelectTemplates

    init() { selects = SelectTemplates(catalog: catalog) }

    func forgetAll() {
        catalog.forget()
        selects.forgetAll()
    }
}

extension SessionContext {
    var catalog: CatalogCache { memory.catalog }
    var selects: SelectTemplates { memory.selects }
    /// Every session context is made with a ``SchemaMemory`` (``ServiceRuntime``).
    private var memory: SchemaMemory { unsafeDowncast(schemaCaches, to: SchemaMemory.self) }
}

/// The table layouts and entity descriptions read from the catalog, kept until ``forget()``.
final class CatalogCache: Sendable {
    private let schemas = Guarded<[String: TableSchema]>([:])
    private let descriptions = Guarded<[ObjectIdentifier: EntityDescription]>([:])
    /// Counts ``forget()`` calls. What was derived from the catalog before the latest one is not cached: the
    /// stores check it under their lock, after which the next forget clears them.
    private let generationCounter = Atomic(0)

    var generation: Int { generationCounter.load(ordering: .acquiring) }
    /// Whether `schema` was read after the latest ``forget()``.
    func isCurrent(_ schema: TableSchema) -> Bool { schema.generation == generation }

    func schema(_ table: String) -> TableSchema? { schemas.withLock { $0[table] } }
    func store(_ schema: TableSchema) { schemas.withLock { if isCurrent(schema) { $0[schema.table] = schema } } }
    func description(_ entity: ObjectIdentifier) -> EntityDescription? { descriptions.withLock { $0[entity] } }
    func store(_ description: EntityDescription, for entity: ObjectIdentifier) {
        descriptions.withLock { if isCurrent(description.schema) { $0[entity] = description } }
    }

    func forget() {
        generationCounter.add(1, ordering: .sequentiallyConsistent)
        schemas.withLock { $0.removeAll() }
        descriptions.withLock { $0.removeAll() }
    }
}
