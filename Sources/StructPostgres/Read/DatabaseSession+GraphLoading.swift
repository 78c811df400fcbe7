import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession: TargetLoader {
    /// Fetches entities, then their relationships as `loading` asks: one query per relationship per level.
    func fetchGraph<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest, loading: Loading, known: KnownShape? = nil)
        async throws -> [E]
    {
        var decoded = try await fetchRows(E.self, request, known: known)
        try await loadRelationships(&decoded, loading: loading)
        return decoded.entities
    }

    /// Fills the ``Related`` slots of `decoded`'s entities that `loading` names.
    func loadRelationships<E: EntityProtocol>(_ decoded: inout DecodedRows<E>, loading: Loading) async throws {
        guard !decoded.layout.description.relationships.isEmpty else {
            // Nothing to load; a loading that names relationships is refused (without `E.relationships`, whose
            // generic metadata every fetch would otherwise look up).
            return try loading.validate(relationships: [], entity: decoded.layout.entity)
        }
        let relationships = E.relationships
        try loading.validate(relationships: relationships.map(\.name), entity: "\(E.self)")
        guard !loading.isEmpty, !relationships.isEmpty else { return }
        guard !decoded.entities.isEmpty else {
            // Nothing to load, but a relationship the schema cannot resolve fails now, not once rows exist.
            for relationship in relationships where loading.nested(relationship.name) != nil { _ = try await resolve(relationship) }
            return
        }
        for relationship in relationships {
            guard let nested = loading.nested(relationship.name) else { continue }
            let resolved = try await resolve(relationship)
            let index = decoded.layout.indexes[resolved.sourceColumn]!
            let cells = decoded.cells
            let links = LinkValues(
                values: (0..<cells.count).map { cells.bytes(row: $0, column: index) },
                elementType: cells.dataTypes[index])
            try await relationship.load(LinkedTargets(loader: self, links: links, resolved: resolved, loading: nested), &decoded.entities)
        }
    }

    /// The targets linked to `links`, with their own relationships loaded, grouped by link value.
    func loadTargets<T: EntityProtocol>(
        _ type: T.Type, of links: LinkValues, _ resolved: ResolvedRelationship, _ loading: Loading
    ) async throws -> [ByteBuffer: [T]] {
        let keys = links.distinct
        guard !keys.isEmpty else {
            try loading.validate(relationships: T.relationships.map(\.name), entity: "\(T.self)")
            return [:]
        }
        let description = try await describe(T.self)
        var statement = Statement(sql: resolved.targetSQL, plannedPerExecution: true)
        _ = statement.bind(cells: RawCellArray(elementType: links.elementType, values: keys))
        var decoded = try await decodedRows(T.self, statement, description)
        try await loadRelationships(&decoded, loading: loading)
        var groups: [ByteBuffer: [T]] = [:]
        groups.reserveCapacity(keys.count)
        for index in decoded.entities.indices {
            guard let link = decoded.cells.bytes(row: index, column: resolved.linkColumn) else { continue }
            groups[link, default: []].append(decoded.entities[index])
        }
        return groups
    }
}
