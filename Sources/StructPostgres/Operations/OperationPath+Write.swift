import Tracing

extension OperationPath {
    /// Upserts `models` and what their conversion registers: a slice at a time beyond
    /// ``WritePlan/rowsPerStatement`` models, otherwise as one unit of work.
    func update<Model: EntityConvertible>(_ models: [Model], options: UpsertOptions) async throws -> UpsertResult {
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
            return try await coalesced(entity, operation, options: options)
        }
        return try await write(try await UnitOfWork.convert(models[...], inParallel: true), operation, options: options)
    }

    /// Upserts `entity` with the concurrent calls of its lane (see ``WriteCoalescing``). The call is measured as
    /// its own operation; a batch is written as the first of its calls would write alone: its statements traced
    /// under that call's span and tracer, sent again after a deadlock or serialization failure as every write is, and
    /// rows with repeated keys in a transaction of this path.
    private func coalesced<E: EntityProtocol>(_ entity: E, _ operation: Operation, options: UpsertOptions) async throws -> UpsertResult {
        try await runtime.telemetry.measure(operation) { span in
            let instruments = runtime.telemetry.inherited()
            return try await runtime.coalescer.lane(E.self, options).upsert(entity) { entities in
                try await instruments.bound {
                    try await retrying(maxRetries: nil, span) {
                        try await runtime.withSession(span, atomic: true) { session in
                            try await writer(session, options).upsertEach(entities) { body in
                                try await TransactionState.run(on: session, options: TransactionOptions()) { _ in try await body() }
                            }
                        }
                    }
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
        let entities = try await UnitOfWork.entities(models)
        return try await perform(Operation(.delete, Model.Entity.self, rows: models.count)) { try await writer($0).delete(entities) }
    }

    func deleteAll<E: EntityProtocol>(_ type: E.Type, _ filter: Filter?) async throws -> Int {
        try await perform(Operation(.deleteAll, E.self)) { try await writer($0).deleteAll(E.self, filter: filter) }
    }

    func writer(_ session: DatabaseSession, _ options: UpsertOptions = .upsert) -> EntityWriter {
        EntityWriter(session: session, cache: runtime.upserts, options: options)
    }
}
