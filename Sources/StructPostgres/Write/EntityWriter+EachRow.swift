import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension EntityWriter {
    /// Upserts `entities` with one result each, in order: what a coalesced batch answers its callers with. Rows
    /// with the same unique key are written in the order given, the last one winning, each with the result it
    /// would have had alone: then the batch takes one statement per repetition, inside `atomically` (a transaction
    /// the caller opens on this writer's session).
    func upsertEach<E: EntityProtocol>(
        _ entities: [E], atomically: (() async throws -> [UpsertResult]) async throws -> [UpsertResult]
    ) async throws -> [UpsertResult] {
        if entities.count == 1 { return [try await upsertOne(entities[0])] }
        let description = try await session.describe(E.self)
        let prepared = try await prepareEach(entities[...], description)
        guard prepared.merged > 0 else { return try await sendEach(prepared, E.self) }
        let rounds = try BatchColumns.rounds(entities, description: description)
        return try await atomically {
            var results = Array(repeating: UpsertResult(), count: entities.count)
            for round in rounds {
                let prepared = try await prepareEach(round.map { entities[$0] }[...], description)
                for (index, result) in zip(round, try await sendEach(prepared, E.self)) { results[index] = result }
            }
            return results
        }
    }

    private func prepareEach<E: EntityProtocol>(_ entities: ArraySlice<E>, _ description: EntityDescription) async throws -> PreparedUpsert
    {
        try await PreparedUpsert(entities, description: description, options: options, cache: cache, inParallel: false, reportsRows: true)
    }

    private func sendEach<E: EntityProtocol>(_ prepared: PreparedUpsert, _ type: E.Type) async throws -> [UpsertResult] {
        guard prepared.rowCount > 1 else { return [try await send(prepared, type)] }
        if let versioned = prepared.versioned {
            let outcomes = try versioned.outcomes(try await run(prepared, type))
            return outcomes.indices.map { versioned.result(outcomes, rows: CollectionOfOne($0)) }
        }
        let untouched = options.conflict == .ignore ? UpsertResult(skipped: 1) : UpsertResult(unchanged: 1)
        var results = Array(repeating: untouched, count: prepared.rowCount)
        for row in try await run(prepared, type) {
            let (place, inserted) = try row.decode((Int64, Bool).self)  // structpg_row, structpg_inserted
            results[Int(place) - 1] = inserted ? UpsertResult(inserted: 1) : UpsertResult(updated: 1)
        }
        return results
    }
}
