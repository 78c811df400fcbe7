import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension EntityWriter {
    /// Replaces the sets of a join-table relationship of `sources` with one statement: links not in the
    /// new sets are deleted (and, with ``RemovalRule/deleteOrphans``, children left without any link),
    /// new links are inserted, links that stay are not touched.
    func replaceSets<Source: EntityProtocol>(
        _ relationship: Relationship<Source>, of sources: [Source]
    ) async throws -> UpsertResult {
        let resolved = try await session.resolve(relationship)
        guard let join = resolved.join, !sources.isEmpty else { return UpsertResult() }
        var owners: [ColumnValue] = []
        var sets: [ColumnValue: [ColumnValue]] = [:]
        for (index, source) in sources.enumerated() {
            let owner = try KeyEncoding.value(of: source, column: join.sourceKey)
            guard owner != .null else {
                throw setError(relationship, "\(Source.self) at index \(index) has NULL '\(join.sourceKey)', so it cannot own a set", join)
            }
            if sets[owner] == nil { owners.append(owner) }
            sets[owner] = try relationship.childKeys(source, join.targetKey)
        }
        var parents: [ColumnValue] = []
        var children: [ColumnValue] = []
        for owner in owners {
            for child in sets[owner]! {
                guard child != .null else {
                    throw setError(
                        relationship, "a child in the set of \(join.sourceKey)=\(owner.keyDescription) has NULL '\(join.targetKey)'", join)
                }
                parents.append(owner)
                children.append(child)
            }
        }
        let statement = setStatement(join, owners: owners, parents: parents, children: children)
        let rows: [PostgresRow]
        do {
            rows = try await session.run(statement)
        } catch var error as StructPostgresError {
            error.relationship = relationship.qualifiedName
            if error.code == .foreignKeyViolation, let key = error.foreignKey {
                error.message =
                    "relationship \(relationship.qualifiedName): \(key) of a link in join table '\(join.table)' is neither in this batch nor in the database; nothing was written"
            } else {
                error.message = "relationship \(relationship.qualifiedName) (join table '\(join.table)'): " + error.message
            }
            throw error.with(entity: "\(Source.self)", table: join.table)
        }
        let (linked, unlinked, orphans) = try rows[0].decode((Int64, Int64, Int64).self)
        return UpsertResult(linked: Int(linked), unlinked: Int(unlinked), orphansDeleted: Int(orphans))
    }

    private func setStatement(
        _ join: ResolvedRelationship.JoinTable, owners: [ColumnValue], parents: [ColumnValue], children: [ColumnValue]
    ) -> Statement {
        let (parentType, childType) = (join.parentType, join.childType)
        let ownerWire = owners[0].wireType ?? .text
        let childWire = children.first?.wireType ?? .text
        var statement = Statement(sql: "")
        let parentParameter = statement.bind(array: BinaryColumnArray(element: ownerWire, values: parents))
        let childParameter = statement.bind(array: BinaryColumnArray(element: childWire, values: children))
        let ownerParameter = statement.bind(array: BinaryColumnArray(element: ownerWire, values: owners))
        let q = SQLIdentifier.quote
        let (jp, jc) = (q(join.parentColumn), q(join.childColumn))
        let owned = "\(ownerParameter)::\(ownerWire.sqlName)[]::\(parentType)[]"
        var sql = """
            WITH pairs AS (SELECT DISTINCT p.parent::\(parentType) AS parent, p.child::\(childType) AS child \
            FROM unnest(\(parentParameter)::\(ownerWire.sqlName)[], \(childParameter)::\(childWire.sqlName)[]) AS p(parent, child)), \
            removed AS (DELETE FROM \(join.quotedTable) j WHERE j.\(jp) = ANY(\(owned)) \
            AND NOT EXISTS (SELECT 1 FROM pairs p WHERE p.parent = j.\(jp) AND p.child = j.\(jc)) RETURNING j.\(jc) AS child), \
            added AS (INSERT INTO \(join.quotedTable) (\(jp), \(jc)) SELECT parent, child FROM pairs ON CONFLICT (\(jp), \(jc)) DO NOTHING RETURNING 1)
            """
        var orphans = "0::int8"
        if join.onRemove == .deleteOrphans {
            let key = q(join.targetKey)
            sql += """
                , orphans AS (DELETE FROM \(join.quotedTargetTable) t WHERE t.\(key) IN (SELECT child FROM removed) \
                AND NOT EXISTS (SELECT 1 FROM pairs p WHERE p.child = t.\(key)) \
                AND NOT EXISTS (SELECT 1 FROM \(join.quotedTable) o WHERE o.\(jc) = t.\(key) AND o.\(jp) <> ALL(\(owned))) RETURNING 1)
                """
            orphans = "(SELECT count(*) FROM orphans)"
        }
        statement.sql = sql + " SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM removed), \(orphans)"
        return statement
    }

    private func setError<Source>(
        _ relationship: Relationship<Source>, _ message: String, _ join: ResolvedRelationship.JoinTable
    ) -> StructPostgresError {
        StructPostgresError(
            .invalidValue, "relationship \(relationship.qualifiedName): \(message)",
            entity: "\(Source.self)", table: join.table)
    }
}
