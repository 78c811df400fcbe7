extension MigrationDrafter {
    /// The migration drafted so far: new tables (referenced ones first), join tables, the foreign keys of back
    /// references, then the changes of existing tables.
    var draft: MigrationDraft {
        var ordered: [NewTable] = []
        var remaining = newTables
        while !remaining.isEmpty {
            let pending = Set(remaining.map(\.table))
            let next = remaining.firstIndex { $0.references.subtracting([$0.table]).isDisjoint(with: pending) } ?? 0
            ordered.append(remaining.remove(at: next))
        }
        let q = SQLIdentifier.quote
        let qualified = SQLIdentifier.quoteQualified
        func type(of side: JoinSide) -> String? { side.type ?? newTables.first { $0.table == side.table }?.columns[side.key] }
        var creates = ordered.map(\.sql)
        var drops = ordered.reversed().map { "-- review: DROP TABLE \(qualified($0.table)); (loses its rows)" }
        for (table, parent, child) in joinTables {
            guard let parentType = type(of: parent), let childType = type(of: child) else {
                creates.append("-- review: join table \(table): the types of \(parent.table).\(parent.key) and \(child.table).\(child.key) are unknown; create it by hand")
                continue
            }
            let columns = [
                "    \(q(parent.column)) \(parentType) NOT NULL REFERENCES \(qualified(parent.table)) (\(q(parent.key))) ON DELETE CASCADE",
                "    \(q(child.column)) \(childType) NOT NULL REFERENCES \(qualified(child.table)) (\(q(child.key))) ON DELETE CASCADE",
                "    PRIMARY KEY (\(q(parent.column)), \(q(child.column)))",
            ]
            creates.append("CREATE TABLE \(qualified(table)) (\n" + columns.joined(separator: ",\n") + "\n);")
            drops.insert("-- review: DROP TABLE \(qualified(table)); (loses its links)", at: 0)
        }
        for link in links {
            guard newTables.first(where: { $0.table == link.table })?.columns[link.column] != nil else {
                creates.append("-- review: relationship \(link.relationship): no column \(link.table).\(link.column) for its foreign key; name it with backReference:")
                continue
            }
            creates.append("ALTER TABLE \(qualified(link.table)) ADD FOREIGN KEY (\(q(link.column))) REFERENCES \(qualified(link.referenced)) (\(q(link.referencedKey)));")
        }
        return MigrationDraft(up: creates + up, down: down.reversed() + drops, concurrentUp: concurrentUp, concurrentDown: concurrentDown)
    }

    /// The foreign keys of `E`'s to-many relationships that are missing: a back reference's in its target's new
    /// table, a join table with both of its own. A back reference into an existing table is a `-- review:` line.
    mutating func addLinks<E: EntityProtocol>(_ type: E.Type, row: RowEncoder.Row, _ session: DatabaseSession) async throws {
        let key = E.uniqueKey.map { E.columnNaming.column(for: $0) }
        guard key.count == 1, let keyIndex = row.columns.firstIndex(of: key[0]) else { return }
        let sourceSchema = try? await session.schema(of: E.table, entity: "\(E.self)")
        for relationship in E.relationships {
            let info = relationship.info
            let targetKey = info.target.uniqueKey.map { info.target.naming.column(for: $0) }
            guard targetKey.count == 1 else { continue }
            let targetSchema = try? await session.schema(of: info.target.table, entity: info.target.entity)
            switch info.kind {
            case .toOne:
                continue
            case .backReference(let declared):
                let column = declared.map { info.target.naming.column(for: $0) } ?? Self.singular(E.table) + "_id"
                guard let targetSchema else {
                    links.append(Link(table: info.target.table, column: column, referenced: E.table, referencedKey: key[0], relationship: info.qualifiedName))
                    continue
                }
                let linked = targetSchema.foreignKeys.contains { $0.columns == [column] && $0.referencedTable == sourceSchema?.oid }
                if !linked {
                    up.append("-- review: relationship \(info.qualifiedName): \(info.target.table).\(column) needs a foreign key to \(E.table) (\(key[0]))")
                }
            case .through(let table, let parentColumn, let childColumn, _):
                guard (try? await session.schema(of: table, entity: info.qualifiedName)) == nil else { continue }
                joinTables.append((
                    table,
                    JoinSide(
                        column: parentColumn.map { E.columnNaming.column(for: $0) } ?? Self.singular(E.table) + "_id",
                        table: E.table, key: key[0], type: sourceSchema?.columns[key[0]]?.castName ?? Self.sqlType(of: row.values[keyIndex])),
                    JoinSide(
                        column: childColumn.map { E.columnNaming.column(for: $0) } ?? Self.singular(info.target.table) + "_id",
                        table: info.target.table, key: targetKey[0], type: targetSchema?.columns[targetKey[0]]?.castName)))
            }
        }
    }
}
