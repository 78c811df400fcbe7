import StructPostgresCore
import StructPostgresDriver

/// The tables a fetch reads: the model's own, those of the relationships it loads, and those its filter and sort keys
/// go through (`author.name`, `reviews.@count`), join tables included.
enum ObservedTables {
    static func of(_ info: TargetInfo, loading: Loading, keys: [String] = []) -> [String] {
        var tables = [info.table]
        for key in keys {
            var current = info
            for step in key.split(separator: ".").dropLast() {
                guard let relationship = current.relationships().first(where: { $0.name == step }) else { break }
                if case .through(let table, _, _, _) = relationship.kind { tables.append(table) }
                tables.append(relationship.target.table)
                current = relationship.target
            }
        }
        func walk(_ relationships: [RelationshipInfo], _ loading: Loading) {
            for relationship in relationships {
                guard let nested = loading.nested(relationship.name) else { continue }
                if case .through(let table, _, _, _) = relationship.kind { tables.append(table) }
                tables.append(relationship.target.table)
                walk(relationship.target.relationships(), nested)
            }
        }
        walk(info.relationships(), loading)
        var seen = Set<String>()
        return tables.filter { seen.insert($0).inserted }
    }
}

extension DatabaseSession {
    /// The notification channel of each table, and the table it announces (schema-qualified), checking that its
    /// triggers are installed.
    /// - Throws: `invalidConfiguration` naming a table without them and how to install them.
    func notificationChannels(_ tables: [String], entity: String) async throws -> [String: String] {
        var channels: [String: String] = [:]
        for table in tables {
            let schema = try await schema(of: table, entity: entity)
            var check = Statement(sql: ChangeNotifications.installedSQL)
            check.append(.int8(schema.oid))
            guard let found = try await run(check).first?.decode((String, Bool).self), found.1 else {
                throw StructPostgresError(
                    .invalidConfiguration,
                    "table '\(table)' has no change notifications: install them with a migration (`structpg observe add \(table)` writes one) or `service.installChangeNotifications(on: [\"\(table)\"])`",
                    entity: entity, table: table)
            }
            channels[ChangeNotifications.channel(oid: schema.oid)] = found.0
        }
        return channels
    }
}
