import StructPostgresCore
import StructPostgresDriver

extension EntityWriter {
    /// Writes a unit of work: the tables in foreign-key order, then the join-table sets. With several tables,
    /// each table's statement is encoded in a task while the server writes the previous table's.
    func write(_ work: EntityContext) async throws -> UpsertResult {
        var total = UpsertResult()
        let tables = try await foreignKeyOrder(work.tables)
        if tables.count == 1 {
            total = try await upsert(tables[0], inParallel: true)
        } else {
            var preparations: [(@Sendable () async throws -> PreparedUpsert?)?] = []
            for (index, table) in tables.enumerated() {
                preparations.append(try await preparation(of: table, inParallel: index == 0))
            }
            total = try await Self.pipelined(tables.count, prepare: { preparations[$0] }) { index, prepared in
                if let prepared { return try await send(prepared, of: tables[index]) }
                // The next table's preparation runs meanwhile: this one takes a single thread.
                return try await upsert(tables[index], inParallel: false)
            }
        }
        for sets in work.joinSets {
            total = total + (try await replaceSets(sets))
        }
        return total
    }

    private func upsert<Table: RegisteredTable>(_ table: Table, inParallel: Bool) async throws -> UpsertResult {
        try await upsert(table.entities, inParallel: inParallel)
    }

    private func send<Table: RegisteredTable>(_ prepared: PreparedUpsert, of table: Table) async throws -> UpsertResult {
        try await send(prepared, Table.Entity.self)
    }

    private func replaceSets<Sets: RegisteredJoinSets>(_ sets: Sets) async throws -> UpsertResult {
        try await replaceSets(sets.relationship, of: sets.sources)
    }

    /// The encoding of a table's upsert, to run away from the connection; `nil` when the table takes more than
    /// one statement. `inParallel`: for the first of several tables, whose encoding nothing else runs beside.
    private func preparation<Table: RegisteredTable>(
        of table: Table, inParallel: Bool
    ) async throws -> (@Sendable () async throws -> PreparedUpsert?)? {
        guard !WritePlan.needsSlicing(table.count) else { return nil }
        let (description, entities, writer) = (try await session.describe(Table.Entity.self), table.entities, self)
        return { try await writer.prepare(entities[...], description: description, inParallel: inParallel) }
    }

    /// The tables with every referenced table before the tables that reference it (the catalog's foreign keys
    /// decide), otherwise in the order they were registered. Tables in a reference cycle keep that order.
    private func foreignKeyOrder(_ tables: [any RegisteredTable]) async throws -> [any RegisteredTable] {
        guard tables.count > 1 else { return tables }
        var schemas: [TableSchema] = []
        for table in tables { schemas.append(try await session.schema(of: table.table, entity: table.entityName)) }
        var remaining = Array(tables.indices)
        var ordered: [any RegisteredTable] = []
        while !remaining.isEmpty {
            let waiting = Set(remaining.map { schemas[$0].oid })
            let next =
                remaining.first { schemas[$0].referencedTables.isDisjoint(with: waiting.subtracting([schemas[$0].oid])) }
                ?? remaining[0]
            ordered.append(tables[next])
            remaining.removeAll { $0 == next }
        }
        return ordered
    }

    /// Converts and writes `models` a slice of ``WritePlan/rowsPerStatement`` at a time, so that memory stays flat
    /// however many there are; the caller runs it in a transaction. The next slice is converted and encoded while
    /// the server writes the current one. Only for models without relationships whose table has no foreign key to
    /// itself (a row could reference one in a later slice); others are one unit of work.
    func writeInSlices<Model: EntityConvertible>(_ models: [Model]) async throws -> UpsertResult {
        let description = try await session.describe(Model.Entity.self)
        guard Model.Entity.relationships.isEmpty, !description.schema.referencesItself else {
            return try await write(try await UnitOfWork.convert(models[...], inParallel: true))
        }
        let writer = self
        /// A slice's upsert, or `nil` when converting its models registered other entities (written as a unit of
        /// work). Only the first slice is prepared on several threads: the others while the server writes.
        @Sendable func prepare(_ range: Range<Int>, inParallel: Bool) async throws -> PreparedUpsert? {
            let context = try await UnitOfWork.convert(models[range], inParallel: inParallel)
            guard let entities = context.onlyEntities(of: Model.Entity.self) else { return nil }
            return try await writer.prepare(entities[...], description: description, inParallel: inParallel)
        }
        let slices = WritePlan.chunks(models.count)
        // Slices go on after one meets version conflicts, so that the error lists them all; the caller's transaction
        // undoes what the others wrote.
        var conflicts: [VersionConflict] = []
        let total = try await Self.pipelined(
            slices.count,
            prepare: { index in { [range = slices[index]] in try await prepare(range, inParallel: index == 0) } },
            send: { index, prepared in
                do {
                    if let prepared { return try await send(prepared, Model.Entity.self) }
                    return try await write(try await UnitOfWork.convert(models[slices[index]], inParallel: false))
                } catch let error as StructPostgresError where error.code == .versionConflict && !error.conflicts.isEmpty {
                    conflicts += error.conflicts
                    return UpsertResult()
                }
            },
            explain: { index, error in
                var error = error
                let range = slices[index]
                error.message +=
                    " (in models \(range.lowerBound)..<\(range.upperBound) of the batch; an index above counts from \(range.lowerBound))"
                return error
            })
        if !conflicts.isEmpty { throw StructPostgresError.versionConflict(conflicts) }
        return total
    }

    /// Sends `count` upserts one after another, each prepared (encoded) in a child task while the one before it is
    /// sent. `prepare` gives the work to run ahead, or `nil`; `send` receives its result (`nil`: nothing was
    /// prepared). `explain` adds to an error of step `index`, whether from preparing or sending.
    static func pipelined(
        _ count: Int,
        prepare: (Int) -> (@Sendable () async throws -> PreparedUpsert?)?,
        send: (Int, PreparedUpsert?) async throws -> UpsertResult,
        explain: (Int, StructPostgresError) -> StructPostgresError = { $1 }
    ) async throws -> UpsertResult {
        try await withThrowingTaskGroup(of: PreparedUpsert?.self) { group in
            func start(_ index: Int) -> Bool {
                guard index < count, let work = prepare(index) else { return false }
                group.addTask { try await work() }
                return true
            }
            var total = UpsertResult()
            var pending = start(0)
            for index in 0..<count {
                do {
                    let prepared = pending ? try await group.next() ?? nil : nil
                    pending = start(index + 1)
                    total = total + (try await send(index, prepared))
                } catch let error as StructPostgresError {
                    throw explain(index, error)
                }
            }
            return total
        }
    }
}
