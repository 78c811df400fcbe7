import StructPostgresCore
import StructPostgresDriver

/// The text of each fetch statement, built once per shape: a fetch's `SELECT` depends on its entity, the keys,
/// operators and kinds of value of its filter, its sort, limit and offset, never on the values it binds. A
/// point query sent again with another value takes its text from here instead of building it.
final class SelectTemplates: Sendable {
    /// What a fetch's text depends on. Built by ``SelectShape`` (the read layer), which decides which fetches
    /// have one.
    struct Shape: Hashable, Sendable {
        let entity: ObjectIdentifier
        /// The filter's and sort's keys and operators, in order.
        var names: [String] = []
        /// The filter's structure, the kinds of its values, the sort's directions, the limit and offset.
        var codes: [Int] = []
        /// The wire types of the values bound, in order.
        var wires: [WireType] = []
    }

    struct Template: Sendable {
        let sql: String
        let preparedKey: PreparedStatementRegistry.Key
        /// The ``TableSchema/generation`` of the layout the text was built from: a fetch that read the table's
        /// layout again since (after `forgetSchemaCache()`) does not take it.
        let generation: Int
    }

    /// A template kept by whoever sends one shape again and again (``PointReadPlan``), so as not to look it up.
    final class Slot: Sendable {
        private let kept = Guarded<Template?>(nil)
        var template: Template? {
            get { kept.withLock { $0 } }
            set { kept.withLock { $0 = newValue } }
        }
    }

    /// Shapes kept at most; past that, the cache starts over (a service whose fetches take many shapes builds
    /// their texts as if there were no cache).
    static let capacity = 1_024

    private let catalog: CatalogCache
    private let templates = Guarded<[Shape: Template]>([:])

    init(catalog: CatalogCache) { self.catalog = catalog }

    /// The template of `shape` built from the layout `schema` (not one built from an earlier layout of the table).
    func template(for shape: Shape, schema: TableSchema) -> Template? {
        guard let template = templates.withLock({ $0[shape] }), template.generation == schema.generation else { return nil }
        return template
    }

    /// Keeps `template`, built from `schema`, unless the schema cache was forgotten since `schema` was read (a text
    /// of the old layout would otherwise outlive the forget).
    func store(_ template: Template, for shape: Shape, builtFrom schema: TableSchema) {
        templates.withLock { templates in
            guard catalog.isCurrent(schema) else { return }
            if templates.count >= Self.capacity, templates[shape] == nil { templates.removeAll() }
            templates[shape] = template
        }
    }

    func forgetAll() { templates.withLock { $0.removeAll() } }
}
