import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// Loads the targets of a relationship: the read layer's job, called by a relationship's declaration, which
/// knows the target type.
protocol TargetLoader: Sendable {
    /// The targets linked to `links`, with their own relationships loaded as `loading` says, grouped by link value.
    func loadTargets<T: EntityProtocol>(
        _ type: T.Type, of links: LinkValues, _ resolved: ResolvedRelationship, _ loading: Loading
    ) async throws -> [ByteBuffer: [T]]
}

/// The link value of each source row (its foreign key, or its key), as the server sent it.
struct LinkValues: Sendable {
    let values: [ByteBuffer?]
    let elementType: PostgresDataType

    var distinct: [ByteBuffer] {
        var seen = Set<ByteBuffer>()
        return values.compactMap { $0 }.filter { seen.insert($0).inserted }
    }

    /// The targets of source `index`; `nil` when its link is NULL or matched nothing.
    func group<T>(_ index: Int, in groups: [ByteBuffer: [T]]) -> [T]? {
        values[index].flatMap { groups[$0] }
    }
}

/// The targets of source rows, loaded by their link values.
struct LinkedTargets: RelationshipTargets {
    let loader: any TargetLoader
    let links: LinkValues
    let resolved: ResolvedRelationship
    let loading: Loading

    func of<T: EntityProtocol>(_ type: T.Type) async throws -> [[T]?] {
        let groups = try await loader.loadTargets(T.self, of: links, resolved, loading)
        return links.values.indices.map { links.group($0, in: groups) }
    }
}
