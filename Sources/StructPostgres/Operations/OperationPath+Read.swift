import StructPostgresCore
import StructPostgresDriver

extension OperationPath {
    func fetch<Model: EntityConvertible>(_ type: Model.Type, _ request: FetchRequest, loading: Loading) async throws -> [Model] {
        var operation = Operation(.fetch, Model.Entity.self)
        operation.countsRows = .read
        let loading = loading.resolved(runtime.defaultLoading)
        if transaction == nil, runtime.coalescer.readsApply, let point = pointRead(Model.Entity.self, request, loading, operation) {
            let alone = try await point.lane.alone { try await fetchAlone(Model.self, request, loading, operation, known: point.known) }
            if let alone { return alone }
            return try await coalescedFetch(Model.self, point, operation)
        }
        return try await fetchAlone(Model.self, request, loading, operation)
    }

    private func fetchAlone<Model: EntityConvertible>(
        _ type: Model.Type, _ request: FetchRequest, _ loading: Loading, _ operation: Operation, known: KnownShape? = nil
    ) async throws -> [Model] {
        try await perform(operation) { session in
            try await session.fetchGraph(Model.Entity.self, request, loading: loading, known: known).models()
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
            var operation = Operation(.stream, Model.Entity.self)
            operation.countsRows = .read
            let running = path.runtime.telemetry.begin(operation)
            do {
                if let running {
                    return try await running.bound { try await path.openCursor(Model.Entity.self, request, operation, running) }
                }
                return try await path.openCursor(Model.Entity.self, request, operation, nil)
            } catch {
                running?.end(rows: 0, error: error)
                throw error
            }
        }
    }

    /// Declares a stream's cursor: in the given transaction, or on a pooled connection held by a task of its own in
    /// a read-only transaction until the stream releases it.
    private func openCursor<E: EntityProtocol>(
        _ type: E.Type, _ request: FetchRequest, _ operation: Operation, _ running: RunningOperation?
    ) async throws -> OpenCursor {
        if let transaction {
            try transaction.ensureActive()
            let reader = try await transaction.session.openCursor(E.self, request, name: transaction.nextCursorName()) {
                try transaction.ensureNotFinished()
            }
            return OpenCursor(reader: reader, operation: running) {}
        }
        let released = ReleaseSignal()
        let opened = AsyncThrowingStream<CursorReader, any Error>.makeStream()
        let instruments = runtime.telemetry.inherited()
        let started = runtime.background.start { [self] in
            do {
                try await instruments.bound {
                    try await session(for: operation, nil) { session in
                        try await session.execute(statement: "BEGIN READ ONLY")
                        do {
                            opened.continuation.yield(try await session.openCursor(E.self, request, name: "structpg_stream"))
                            opened.continuation.finish()
                        } catch {
                            await session.rollBack()
                            throw error
                        }
                        // The service stopping ends the stream: its connection is closed, so that the reader's next batch
                        // fails with `connectionLost` and no other call is given the connection.
                        await withTaskCancellationHandler {
                            await released.wait()
                        } onCancel: {
                            released.signal()
                        }
                        if Task.isCancelled { try? await session.connection.close().get() }
                        // Closes the cursor; a connection lost or closed by a cancellation is dropped by the pool.
                        await session.rollBack()
                    }
                }
            } catch {
                opened.continuation.finish(throwing: error)
            }
        }
        guard started else { throw BackgroundTasks.stopped("the stream was not opened") }
        var iterator = opened.stream.makeAsyncIterator()
        guard let reader = try await iterator.next() else {
            released.signal()
            if Task.isCancelled { throw CancellationError() }
            throw StructPostgresError(.connectionLost, "the stream's connection closed before the query started")
        }
        return OpenCursor(reader: reader, operation: running) {
            reader.abandon()
            released.signal()
        }
    }
}
