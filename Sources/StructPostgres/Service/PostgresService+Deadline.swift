import StructPostgresCore
import StructPostgresDriver

extension PostgresService {
    /// Runs `body` with a deadline `timeout` from now for every call it makes, on any service: a call still waiting
    /// for a connection when it passes fails with ``StructPostgresError/Code-swift.struct/deadlineExceeded`` having
    /// sent nothing; a statement still running is stopped, its connection closed (never reused), and the call fails
    /// with the same code, whose message says that whether it took effect is unknown. Nothing is sent after the
    /// deadline, nor sent again. A deadline already set around this one is kept when it is earlier.
    ///
    /// The deadline bounds waiting for connections and statements, a transaction's `COMMIT` included; work between
    /// statements is not interrupted. Single-row upserts and deletes and point reads under a deadline run on their
    /// own, not gathered with other calls' into a batch that would run without it (see ``WriteCoalescing`` and
    /// ``ReadCoalescing``). A default for every call: ``PoolOptions/callTimeout``.
    ///
    /// ```swift
    /// let books = try await PostgresService.withTimeout(.milliseconds(800)) {
    ///     try await service.fetch(BookModel.self, where: .equal("publisher", "Apress"))
    /// }
    /// ```
    /// - Throws: ``StructPostgresError`` `invalidConfiguration` when `timeout` is not positive; otherwise what `body`
    ///   throws.
    public static func withTimeout<T>(_ timeout: Duration, _ body: () async throws -> T) async throws -> T {
        guard timeout > .zero else {
            throw StructPostgresError(.invalidConfiguration, "PostgresService.withTimeout: the timeout \(timeout) is not positive")
        }
        return try await CallDeadline.within(.now + timeout, body)
    }

    /// Runs `body` with `deadline` for every call it makes: ``withTimeout(_:_:)`` with an instant. A deadline that has
    /// passed fails every call at once, sending nothing.
    ///
    /// ```swift
    /// let deadline = ContinuousClock.now + .seconds(2)
    /// try await PostgresService.withDeadline(deadline) {
    ///     try await service.update(entities: [review])
    /// }
    /// ```
    public static func withDeadline<T>(_ deadline: ContinuousClock.Instant, _ body: () async throws -> T) async rethrows -> T {
        try await CallDeadline.within(deadline, body)
    }
}
