import StructPostgresCore
import StructPostgresDriver

extension MigrationDrafter {
    /// The migration drafted so far: new tables (referenced ones first), join tables, the changes of existing tables,
    /// then the foreign keys added once every table they link exists.
    var draft: MigrationDraft {
        let newNames = Set(newTables.map(\.table))
        var created = Set(existing.keys)
        var ordered: [NewTable] = []
        var remaining = newTables
        var creates: [String] = []
        var alters: [String] = []
        var added: Set<ForeignKey> = []
        while !remaining.isEmpty {
            let ready = remaining.firstIndex { new in
                new.foreignKeys.allSatisfy {
                    $0.referenced == new.table || created.contains($0.referenced) || !newNames.contains($0.referenced)
                }
            }
            let new = remaining.remove(at: ready ?? 0)  // none ready: a cycle, whose keys wait for both tables
            var inline: [ForeignKey] = []
            for key in new.foreignKeys where added.insert(key).inserted {
                if key.referenced == new.table || created.contains(key.referenced) {
                    inline.append(key)
                } else if newNames.contains(key.referenced) {
                    alters.append(Self.addForeignKey(key))
                } else {
                    creates.append(
                        Self.review(
                            "\(new.table).\(key.column) references \(key.referenced), which does not exist and which no model of this draft creates"
                        ))
                }
            }
            creates.append(createStatement(new, inline: inline))
            created.insert(new.table)
            ordered.append(new)
        }
        var drops = ordered.reversed().map { Self.review("DROP TABLE \(Self.quoteQualified($0.table)); (loses its rows)") }
        for join in joinTables {
            guard let parentType = type(of: join.parent), let childType = type(of: join.child) else {
                creates.append(
                    Self.review(
                        "join table \(join.table): the types of \(join.parent.table).\(join.parent.key) and \(join.child.table).\(join.child.key) are unknown; create it by hand"
                    ))
                continue
            }
            let columns = [
                "    \(Self.quote(join.parent.column)) \(parentType) NOT NULL REFERENCES \(Self.quoteQualified(join.parent.table)) (\(Self.quote(join.parent.key))) ON DELETE CASCADE",
                "    \(Self.quote(join.child.column)) \(childType) NOT NULL REFERENCES \(Self.quoteQualified(join.child.table)) (\(Self.quote(join.child.key))) ON DELETE CASCADE",
                "    PRIMARY KEY (\(Self.quote(join.parent.column)), \(Self.quote(join.child.column)))",
            ]
            creates.append("CREATE TABLE \(Self.quoteQualified(join.table)) (\n" + columns.joined(separator: ",\n") + "\n);")
            drops.insert(Self.review("DROP TABLE \(Self.quoteQualified(join.table)); (loses its links)"), at: 0)
        }
        for wanted in wanted where !added.contains(wanted.key) {
            let key = wanted.key
            let holder = newTables.first { $0.table == key.table }.map { Set($0.columns.map(\.name)) } ?? existing[key.table]
            guard let holder else {
                alters.append(
                    Self.review(
                        "relationship \(wanted.relationship): table \(key.table) does not exist, and no model of this draft creates it"))
                continue
            }
            guard holder.contains(key.column) else {
                alters.append(
                    Self.review(
                        "relationship \(wanted.relationship): no column \(key.table).\(key.column) for its foreign key; name it with \(wanted.naming)"
                    ))
                continue
            }
            guard newNames.contains(key.referenced) || existing[key.referenced] != nil else {
                alters.append(
                    Self.review(
                        "relationship \(wanted.relationship): table \(key.referenced) does not exist, and no model of this draft creates it"
                    ))
                continue
            }
            added.insert(key)
            alters.append(Self.addForeignKey(key))
        }
        return MigrationDraft(
            up: creates + up + alters, down: down.reversed() + drops, concurrentUp: concurrentUp, concurrentDown: concurrentDown)
    }

    private func type(of side: JoinSide) -> String? {
        side.type ?? newTables.first { $0.table == side.table }?.type(of: side.key)
    }

    /// A column's type as the catalog names it, unless the name holds what a draft must not (a user type named
    /// with a line break).
    private static func catalogType(_ schema: TableSchema?, _ column: String) -> String? {
        guard let type = schema?.columns[column]?.castName, !type.unicodeScalars.contains(where: OneLine.isUnsafe) else { return nil }
        return type
    }

    static func addForeignKey(_ key: ForeignKey) -> String {
        "ALTER TABLE \(quoteQualified(key.table)) ADD FOREIGN KEY (\(quote(key.column))) REFERENCES \(quoteQualified(key.referenced)) (\(key.referencedKey.map(quote).joined(separator: ", ")));"
    }

    /// The foreign keys of `E`'s to-one relationships whose column it encodes: for a new table, placed by ``draft``;
    /// for an existing one, wanted where the constraint is missing.
    mutating func addToOnes<E: EntityProtocol>(_ type: E.Type, row: RowEncoder.Row, schema: TableSchema?, _ session: DatabaseSession)
        async throws -> [ToOne]
    {
        var found: [ToOne] = []
        for relationship in E.relationships {
            let info = relationship.info
            guard case .toOne(let declared) = info.kind else { continue }
            let candidates = [declared, info.name + "ID", info.name + "Id"].compactMap { $0 }.map { E.columnNaming.column(for: $0) }
            guard let column = candidates.first(where: row.columns.contains) else { continue }
            let targetKey = info.target.uniqueKey.map { info.target.naming.column(for: $0) }
            let key = ForeignKey(table: E.table, column: column, referenced: info.target.table, referencedKey: targetKey)
            guard let schema else {
                found.append(ToOne(name: info.name, key: key))
                continue
            }
            let target = try? await session.schema(of: info.target.table, entity: info.target.entity)
            if let target { existing[info.target.table, default: []].formUnion(target.columnOrder) }
            if let target, schema.foreignKeys.contains(where: { $0.columns == [column] && $0.referencedTable == target.oid }) { continue }
            found.append(ToOne(name: info.name, key: key))
            wanted.append(WantedKey(key: key, relationship: info.qualifiedName, naming: "column:"))
        }
        return found
    }

    /// The foreign keys of `E`'s to-many relationships: a back reference's on its target's table, wanted unless it
    /// is there; a join table with both of its own.
    mutating func addLinks<E: EntityProtocol>(_ type: E.Type, row: RowEncoder.Row, _ session: DatabaseSession) async throws {
        let key = E.uniqueKey.map { E.columnNaming.column(for: $0) }
        guard key.count == 1, let keyIndex = row.columns.firstIndex(of: key[0]) else { return }
        let sourceSchema = try? await session.schema(of: E.table, entity: "\(E.self)")
        for relationship in E.relationships {
            let info = relationship.info
            let targetKey = info.target.uniqueKey.map { info.target.naming.column(for: $0) }
            guard targetKey.count == 1 else { continue }
            let targetSchema = try? await session.schema(of: info.target.table, entity: info.target.entity)
            if let targetSchema { existing[info.target.table, default: []].formUnion(targetSchema.columnOrder) }
            switch info.kind {
            case .toOne:
                continue
            case .backReference(let declared):
                let column = declared.map { info.target.naming.column(for: $0) } ?? Self.singular(E.table) + "_id"
                if let targetSchema, let sourceSchema,
                    targetSchema.foreignKeys.contains(where: { $0.columns == [column] && $0.referencedTable == sourceSchema.oid })
                {
                    continue
                }
                let foreignKey = ForeignKey(table: info.target.table, column: column, referenced: E.table, referencedKey: key)
                wanted.append(WantedKey(key: foreignKey, relationship: info.qualifiedName, naming: "backReference:"))
            case .through(let table, let parentColumn, let childColumn, _):
                guard (try? await session.schema(of: table, entity: info.qualifiedName)) == nil,
                    !joinTables.contains(where: { $0.table == table })
                else { continue }
                let parent = JoinSide(
                    column: parentColumn.map { E.columnNaming.column(for: $0) } ?? Self.singular(E.table) + "_id",
                    table: E.table, key: key[0], type: Self.catalogType(sourceSchema, key[0]) ?? Self.sqlType(of: row.values[keyIndex]))
                let child = JoinSide(
                    column: childColumn.map { E.columnNaming.column(for: $0) } ?? Self.singular(info.target.table) + "_id",
                    table: info.target.table, key: targetKey[0], type: Self.catalogType(targetSchema, targetKey[0]))
                guard parent.column != child.column else {
                    up.append(
                        Self.review(
                            "relationship \(info.qualifiedName): both columns of join table \(table) would be named \(parent.column); name them with parentColumn: and childColumn:"
                        ))
                    continue
                }
                joinTables.append(JoinTable(table: table, relationship: info.qualifiedName, parent: parent, child: child))
            }
        }
    }
}
