import Tracing
import StructPostgresCore
import StructPostgresDriver

extension OperationPath {
    /// Upserts `models` and what their conversion registers: a slice at a time beyond
    /// ``WritePlan/rowsPerStatement`` models, otherwise as one unit of work.
    func update<Model: EntityConvertible>(_ models: [Model], options: UpsertOptions) async throws -> UpsertResult {
        let options = options.resolvingMergePolicy(runtime.configuration.mergePolicy)
        var operation = Operation(.upsert, Model.Entity.self, rows: models.count)
        operation.countsRows = .written
        if WritePlan.needsSlicing(models.count) {
            return try await performAtomically(operation) { try await writer($0, options).writeInSlices(models) }
        }
        // A server's most frequent write: one model, nothing else registered; no unit of work to build.
        if models.count == 1, let entity = try UnitOfWork.flatEntity(of: models[0]) {
            guard transaction == nil, runtime.coalescer.applies(to: options) else {
                return try await perform(operation) { try await writer($0, options).upsertOne(entity) }
            }
            let lane = runtime.coalescer.lane(Model.Entity.self, options)
            if let alone = try await lane.alone({ try await perform(operation) { try await writer($0, options).upsertOne(entity) } }) {
                return alone
            }
            return try await coalesced(entity, lane, operation, options: options)
        }
        return try await write(try await UnitOfWork.convert(models[...], inParallel: true), operation, options: options)
    }

    /// Upserts `entity` with the concurrent calls of its lane (see ``WriteCoalescing``). The call is measured as
    /// its own operation; a batch is written as the first of its calls would write alone, through the path's one
    /// entry (``session(for:_:_:)``): its statements traced under that call's span and tracer, sent again as every
    /// write is (``SendAgain``), and
    /// rows with repeated keys in a transaction of this path.
    ///
    /// A batch of an entity with a version leaves conflicting rows as stored (``MergePolicy/rollback``, see
    /// ``UpsertOptions/coalescedMergePolicy``), so that one caller's conflict is no other's; a caller whose policy is
    /// ``MergePolicy/error`` then gets its own conflict as an error.
    private func coalesced<E: EntityProtocol>(
        _ entity: E, _ lane: CoalescingLane<E, UpsertResult>, _ operation: Operation, options: UpsertOptions
    ) async throws -> UpsertResult {
        let failsOnConflict = E.versionKey != nil && (options.mergePolicy ?? .error) == .error
        let options = E.versionKey == nil ? options : options.merging(options.coalescedMergePolicy)
        return try await runtime.telemetry.measure(operation) { span in
            let instruments = runtime.telemetry.inherited()
            let result = try await lane.submit(entity) { entities in
                await Self.splittingOnRowFaults(entities) { entities in
                    try await instruments.bound {
                        try await session(for: operation, span) { session in
                            try await writer(session, options).upsertEach(entities) { body in
                                try await TransactionState.run(on: session, options: TransactionOptions()) { _ in try await body() }
                            }
                        }
                    }
                }
            }
            if failsOnConflict, !result.conflicts.isEmpty { throw StructPostgresError.versionConflict(result.conflicts) }
            return result
        }
    }

    /// Deletes `entity`'s row with the concurrent single-row deletes of its type (see ``WriteCoalescing``): one
    /// `DELETE ... RETURNING` for the batch, each caller learning whether its row went (a key deleted twice goes
    /// to the first of its callers).
    private func coalescedDelete<E: EntityProtocol>(_ entity: E, _ lane: CoalescingLane<E, Int>, _ operation: Operation) async throws -> Int
    {
        try await runtime.telemetry.measure(operation) { span in
            let instruments = runtime.telemetry.inherited()
            return try await lane.submit(entity) { entities in
                await Self.splittingOnRowFaults(entities) { entities in
                    try await instruments.bound {
                        try await session(for: operation, span) { try await writer($0).deleteEach(entities) }
                    }
                }
            }
        }
    }

    /// Runs `write` on `entities`; when the batch fails for what one of its rows holds, runs each half again on its
    /// own, in order, so that only the calls whose rows are at fault get the error.
    private static func splittingOnRowFaults<E: Sendable, Output>(
        _ entities: [E], _ write: ([E]) async throws -> [Output]
    ) async -> [Result<Output, any Error>] {
        do {
            return try await write(entities).map { .success($0) }
        } catch let error as StructPostgresError where entities.count > 1 && isARowsFault(error) {
            let middle = entities.count / 2
            return await splittingOnRowFaults(Array(entities[..<middle]), write) + splittingOnRowFaults(Array(entities[middle...]), write)
        } catch {
            return entities.map { _ in .failure(error) }
        }
    }

    /// Whether an error comes from what a row holds: a value refused before sending, a constraint, a data
    /// exception or two rows the server holds for one (SQLSTATE classes 21, 22 and 23). Nothing of a failed
    /// statement was written, so its halves can be written again. Any other error reaches every call of the batch.
    private static func isARowsFault(_ error: StructPostgresError) -> Bool {
        let codes: [StructPostgresError.Code] = [
            .invalidValue, .unsupportedType, .uniqueViolation, .foreignKeyViolation, .notNullViolation, .checkViolation,
        ]
        return codes.contains(error.code) || ["21", "22", "23"].contains(error.sqlState?.prefix(2) ?? "")
    }

    /// Writes a unit of work: atomically when it takes more than one statement.
    func write(_ work: EntityContext, _ operation: Operation, options: UpsertOptions) async throws -> UpsertResult {
        guard !work.isEmpty else { return UpsertResult() }
        if WritePlan.statementCount(work) == 1 {
            return try await perform(operation) { try await writer($0, options).write(work) }
        }
        return try await performAtomically(operation) { try await writer($0, options).write(work) }
    }

    /// Deletes the models' rows; those of an entity with a version only at its version, as `policy` (else the
    /// configuration's ``PostgresConfiguration/mergePolicy``) says.
    ///
    /// A single-row delete is coalesced with the concurrent ones of its type, unless it is conditional (an entity with
    /// a version, under ``MergePolicy/error`` or ``MergePolicy/rollback``): a batch's `DELETE ... RETURNING` tells
    /// each caller whether its row went, but not a conflict apart from a row already gone, nor (for two callers of one
    /// key at different versions) what deleting one after the other would have done. Such a delete is sent alone, as
    /// before coalescing, and each caller gets exactly a lone call's outcome. Under ``MergePolicy/overwrite`` the
    /// delete is unconditional and coalesces as any other.
    func delete<Model: EntityConvertible>(_ models: [Model], policy: MergePolicy? = nil) async throws -> Int {
        let entities = try await UnitOfWork.entities(models)
        let options = UpsertOptions.upsert.merging(policy ?? runtime.configuration.mergePolicy)
        let operation = Operation(.delete, Model.Entity.self, rows: models.count)
        let conditional = Model.Entity.versionKey != nil && options.mergePolicy != .overwrite
        if entities.count == 1, transaction == nil, runtime.coalescer.deletesApply, !conditional {
            let lane = runtime.coalescer.deleteLane(Model.Entity.self)
            if let alone = try await lane.alone({ try await perform(operation) { try await writer($0, options).delete(entities) } }) {
                return alone
            }
            return try await coalescedDelete(entities[0], lane, operation)
        }
        return try await perform(operation) { try await writer($0, options).delete(entities) }
    }

    func deleteAll<E: EntityProtocol>(_ type: E.Type, _ filter: Filter?) async throws -> Int {
        try await perform(Operation(.deleteAll, E.self)) { try await writer($0).deleteAll(E.self, filter: filter) }
    }

    func writer(_ session: DatabaseSession, _ options: UpsertOptions = .upsert) -> EntityWriter {
        EntityWriter(session: session, cache: runtime.upserts, options: options)
    }
}
