extension OperationPath {
    func fetch<Model: EntityConvertible>(_ type: Model.Type, _ request: FetchRequest, loading: Loading) async throws -> [Model] {
        var operation = Operation(.fetch, Model.Entity.self)
        operation.countsRows = "read"
        return try await perform(operation) { session in
            try await session.fetchGraph(Model.Entity.self, request, loading: loading.resolved(runtime.defaultLoading))
                .map { try $0.toModel() }
        }
    }

    func count<E: EntityProtocol>(_ type: E.Type, _ filter: Filter?) async throws -> Int {
        try await perform(Operation(.count, E.self)) { try await $0.count(E.self, filter: filter) }
    }

    func exists<E: EntityProtocol>(_ type: E.Type, _ filter: Filter?) async throws -> Bool {
        try await perform(Operation(.exists, E.self)) { try await $0.exists(E.self, filter: filter) }
    }

    func stream<Model: EntityConvertible>(_ type: Model.Type, _ request: FetchRequest) -> ModelStream<Model> {
        let path = self
        return ModelStream {
            // A filter that cannot be compiled fails the first iteration before a connection or a transaction is taken.
            if let refusal = request.filter?.refusal { throw refusal }
            return try await path.openCursor(Model.Entity.self, request)
        }
    }

    /// Declares a stream's cursor: in the given transaction, or on a pooled connection held by a task of its own in
    /// a read-only transaction until the stream releases it.
    private func openCursor<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest) async throws -> OpenCursor {
        let operation = Operation(.stream, E.self)
        if let transaction {
            let reader = try await perform(operation) { session in
                try await session.openCursor(E.self, request, name: transaction.nextCursorName()) { try transaction.ensureNotFinished() }
            }
            return OpenCursor(reader: reader) {}
        }
        let released = ReleaseSignal()
        let opened = AsyncThrowingStream<CursorReader, any Error>.makeStream()
        Task { [runtime, self] in
            do {
                try await runtime.withSession(nil, route(operation)) { session in
                    try await session.execute(statement: "BEGIN READ ONLY")
                    do {
                        opened.continuation.yield(try await session.openCursor(E.self, request, name: "structpg_stream"))
                        opened.continuation.finish()
                    } catch {
                        await session.rollBack()
                        throw error
                    }
                    await released.wait()
                    // Closes the cursor; a connection lost or closed by a cancellation is dropped by the pool.
                    await session.rollBack()
                }
            } catch {
                opened.continuation.finish(throwing: error)
            }
        }
        var iterator = opened.stream.makeAsyncIterator()
        guard let reader = try await iterator.next() else {
            released.signal()
            if Task.isCancelled { throw CancellationError() }
            throw StructPostgresError(.connectionLost, "the stream's connection closed before the query started")
        }
        return OpenCursor(reader: reader) {
            reader.abandon()
            released.signal()
        }
    }
}
