import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// The write layer's entry: writes entities on one session, one statement per table (per chunk of
/// ``WritePlan/rowsPerStatement`` rows), with the service's upsert cache.
struct EntityWriter: Sendable {
    let session: DatabaseSession
    let cache: UpsertCache
    let options: UpsertOptions

    /// Writes a batch of one table: `INSERT ... SELECT ... FROM unnest($1::uuid[], ...) ON CONFLICT (key) DO
    /// UPDATE ...`, or for a single row `INSERT ... VALUES ($1, ...) ON CONFLICT ...`; both are prepared once per
    /// connection (the server switches to one generic plan after five executions).
    ///
    /// A batch of more than ``WritePlan/rowsPerStatement`` rows is sent in chunks (callers run them in one
    /// transaction), after merging its repeated keys across the whole batch, as one statement merges them. A table
    /// with a foreign key to itself is always written with one statement: a row may reference a later one.
    /// `inParallel`: nothing else is encoded meanwhile, so a chunk of ``ParallelRows/minimum`` rows or more is
    /// encoded on more than one thread.
    func upsert<E: EntityProtocol>(_ entities: [E], inParallel: Bool) async throws -> UpsertResult {
        guard WritePlan.needsSlicing(entities.count) else { return try await upsertChunk(entities[...], inParallel: inParallel) }
        let description = try await session.describe(E.self)
        guard !description.schema.referencesItself else { return try await upsertChunk(entities[...], inParallel: inParallel) }
        let kept = try BatchColumns.lastOfEachKey(entities, description: description)
        let unique = kept.count == entities.count ? entities : kept.map { entities[$0] }
        var total = UpsertResult(merged: entities.count - unique.count)
        var conflicts: [VersionConflict] = []
        for chunk in WritePlan.chunks(unique.count) {
            do {
                total = total + (try await upsertChunk(unique[chunk], inParallel: inParallel))
            } catch let error as StructPostgresError where error.code == .versionConflict && !error.conflicts.isEmpty {
                // The chunks go on, so that the error lists the conflicts of them all; the caller's transaction undoes
                // what the others wrote.
                conflicts += error.conflicts
            }
        }
        if !conflicts.isEmpty { throw StructPostgresError.versionConflict(conflicts) }
        return total
    }

    /// Upserts one entity: through its type's single-row plan when it fits, otherwise as a batch of one (which
    /// makes the plan). A server's most frequent write, kept free of arrays of `E`.
    func upsertOne<E: EntityProtocol>(_ entity: E) async throws -> UpsertResult {
        if let prepared = planned(entity) { return try await send(prepared, E.self) }
        let description = try await session.describe(E.self)
        return try await send(try await prepare([entity][...], description: description, inParallel: false), E.self)
    }

    /// The single-row upsert of `entity` through its type's plan, or `nil` when there is none or it does not fit.
    private func planned<E: EntityProtocol>(_ entity: E) -> PreparedUpsert? {
        cache.singleRowPlan(.init(E.self, options))?.prepare(entity, options: options)
    }

    private func upsertChunk<E: EntityProtocol>(_ entities: ArraySlice<E>, inParallel: Bool) async throws -> UpsertResult {
        guard !entities.isEmpty else { return UpsertResult() }
        if entities.count == 1, let prepared = planned(entities[entities.startIndex]) {
            return try await send(prepared, E.self)
        }
        let description = try await session.describe(E.self)
        return try await send(try await prepare(entities, description: description, inParallel: inParallel), E.self)
    }

    /// Encodes and checks an upsert (see ``PreparedUpsert/init(_:description:options:cache:inParallel:)``).
    func prepare<E: EntityProtocol>(
        _ entities: ArraySlice<E>, description: EntityDescription, inParallel: Bool
    ) async throws -> PreparedUpsert {
        try await PreparedUpsert(entities, description: description, options: options, cache: cache, inParallel: inParallel)
    }

    /// Sends a prepared upsert; counts what it did. For an entity with a version, also what became of each row: under
    /// ``MergePolicy/error`` a conflict throws (the statement wrote nothing).
    func send(_ prepared: PreparedUpsert, _ type: any EntityProtocol.Type) async throws -> UpsertResult {
        let rows = try await run(prepared, type)
        if let versioned = prepared.versioned {
            let outcomes = try versioned.outcomes(rows)
            let result = versioned.result(outcomes, rows: outcomes.indices, merged: prepared.merged)
            if !result.conflicts.isEmpty, (prepared.options.mergePolicy ?? .error) == .error {
                throw StructPostgresError.versionConflict(result.conflicts)
            }
            return result
        }
        let inserted: Int64
        let changed: Int64
        if prepared.rowCount == 1 {
            inserted = try rows.first?.first?.decode(Bool.self) == true ? 1 : 0
            changed = Int64(rows.count) - inserted
        } else {
            (inserted, changed) = try rows[0].decode((Int64, Int64).self)
        }
        var result = UpsertResult(inserted: Int(inserted), merged: prepared.merged)
        if prepared.options.conflict == .ignore {
            result.skipped = prepared.rowCount - Int(inserted)
        } else {
            result.updated = Int(changed)
            result.unchanged = prepared.rowCount - Int(inserted) - Int(changed)
        }
        return result
    }

    /// Runs a prepared upsert; an error names the entity and table, and a missing reference what is missing.
    func run(_ prepared: PreparedUpsert, _ type: any EntityProtocol.Type) async throws -> [PostgresRow] {
        do {
            return try await session.run(prepared.statement)
        } catch let error as StructPostgresError {
            let description = prepared.description
            var named = error.with(entity: description.entity, table: description.schema.table)
            if named.property == nil, let column = named.column, let index = prepared.columns.firstIndex(of: column) {
                named.property = prepared.properties[index]
            }
            if named.rowKey == nil { named.rowKey = prepared.violatingRow?.rowKey(for: named) }
            if let raced = prepared.versioned?.racedInsert(named) { throw raced }
            throw UpsertSQL.explainMissingReference(named, type, prepared)
        }
    }
}
