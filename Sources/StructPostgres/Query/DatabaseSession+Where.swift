import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession {
    /// Appends ` WHERE <filter>` to `statement`, resolving the relationships the filter's keys go through.
    func appendWhere(_ filter: Filter?, _ description: EntityDescription, _ statement: inout Statement) async throws {
        guard let filter else { return }
        try Self.appendWhere(filter, description, relationships: try await relationships(along: filter.keys, from: description), &statement)
    }

    /// Appends ` WHERE <filter>` to `statement`; `relationships`: those the filter's keys go through, resolved.
    static func appendWhere(
        _ filter: Filter?, _ description: EntityDescription, relationships: [String: ResolvedRelationship], _ statement: inout Statement
    ) throws {
        guard let filter else { return }
        var builder = FilterSQL(relationships: relationships)
        let scope = FilterSQL.Scope(description: description, qualifier: description.schema.quotedTable)
        statement.sql += " WHERE " + (try builder.condition(filter.node, in: scope, into: &statement))
    }

    /// The relationships that keys go through or name, resolved (their tables read from the catalog).
    func relationships(along keys: [String], from root: EntityDescription) async throws -> [String: ResolvedRelationship] {
        var resolved: [String: ResolvedRelationship] = [:]
        let throughRelationships = keys.filter { !FilterSQL.namesColumn($0, of: root) }
        guard !throughRelationships.isEmpty else { return resolved }
        for key in throughRelationships {
            var description = root
            for name in key.split(separator: ".").map(String.init) {
                guard let info = description.relationships.first(where: { $0.name == name }) else { break }
                let link = try await resolve(info, from: description)
                resolved["\(description.entity).\(name)"] = link
                description = link.target
            }
        }
        return resolved
    }
}
