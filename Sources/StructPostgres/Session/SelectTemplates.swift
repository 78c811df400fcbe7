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
    }

    /// Shapes kept at most; past that, the cache starts over (a service whose fetches take many shapes builds
    /// their texts as if there were no cache).
    static let capacity = 1_024

    private let templates = Guarded<[Shape: Template]>([:])

    func template(for shape: Shape) -> Template? {
        templates.withLock { $0[shape] }
    }

    func store(_ template: Template, for shape: Shape) {
        templates.withLock { templates in
            if templates.count >= Self.capacity { templates.removeAll() }
            templates[shape] = template
        }
    }

    func forgetAll() { templates.withLock { $0.removeAll() } }
}
