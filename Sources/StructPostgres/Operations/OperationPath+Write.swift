import Tracing

extension OperationPath {
    /// Upserts `models` and what their conversion registers: a slice at a time beyond
    /// ``WritePlan/rowsPerStatement`` models, otherwise as one unit of work.
    func update<Model: EntityConvertible>(_ models: [Model], options: UpsertOptions) async throws -> UpsertResult {
        var operation = Operation(.upsert, Model.Entity.self, rows: models.count)
        operation.countsRows = "written"
        if WritePlan.slices(models.count) {
            return try await performAtomically(operation) { try await writer($0, options).writeInSlices(models) }
        }
        // A server's most frequent write: one model, nothing else registered; no unit of work to build.
        if models.count == 1, let entity = try UnitOfWork.flatEntity(of: models[0]) {
            guard transaction == nil, runtime.coalescer.applies(to: options) else {
                return try await perform(operation) { try await writer($0, options).upsertOne(entity) }
            }
            return try await coalesced(entity, operation, options: options)
        }
        return try await write(try UnitOfWork.convert(models[...], inParallel: true), operation, options: options)
    }

    /// Upserts `entity` with the concurrent calls of its lane (see ``WriteCoalescing``). The call is measured as
    /// its own operation; a batch's statements are traced under the span of the call whose task sent it.
    private func coalesced<E: EntityProtocol>(_ entity: E, _ operation: Operation, options: UpsertOptions) async throws -> UpsertResult {
        try await runtime.telemetry.measure(operation) { span in
            let context = InstrumentationContext.current
            return try await runtime.coalescer.lane(E.self, options).upsert(entity) { entities in
                try await InstrumentationContext.$current.withValue(context) {
                    try await runtime.withSession(span) { try await writer($0, options).upsertEach(entities) }
                }
            }
        }
    }

    /// Writes a unit of work: atomically when it takes more than one statement.
    func write(_ work: EntityContext, _ operation: Operation, options: UpsertOptions) async throws -> UpsertResult {
        guard !work.isEmpty else { return UpsertResult() }
        if WritePlan.statementCount(work) == 1 {
            return try await perform(operation) { try await writer($0, options).write(work) }
        }
        return try await performAtomically(operation) { try await writer($0, options).write(work) }
    }

    func delete<Model: EntityConvertible>(_ models: [Model]) async throws -> Int {
        let entities = try UnitOfWork.entities(models)
        return try await perform(Operation(.delete, Model.Entity.self, rows: models.count)) { try await writer($0).delete(entities) }
    }

    func deleteAll<E: EntityProtocol>(_ type: E.Type, _ filter: Filter?) async throws -> Int {
        try await perform(Operation(.deleteAll, E.self)) { try await writer($0).deleteAll(E.self, filter: filter) }
    }

    func writer(_ session: DatabaseSession, _ options: UpsertOptions = .upsert) -> EntityWriter {
        EntityWriter(session: session, cache: runtime.upserts, options: options)
    }
}
