import PostgresNIO

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
