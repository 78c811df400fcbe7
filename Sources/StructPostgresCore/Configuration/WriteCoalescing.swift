/// How concurrent single-row upserts are gathered into one statement (see the *Performance* article).
///
/// With coalescing on, an `update(entities: [model])` of one model with nothing else to write, outside a
/// transaction, joins the other such calls of its entity type and upsert options that are waiting: they are
/// written together as one statement and one commit, and each caller gets its own result or its own error.
/// When calls come one at a time, each is sent at once: a lone call waits for nothing. Under concurrency, calls
/// gather while a write of their kind is under way, or until as many have come as the last batch held (the callers
/// of a batch tend to come back together), for at most ``window``, or until ``maxBatch`` have arrived.
///
/// ```swift
/// var configuration = try PostgresConfiguration(url: "postgres://app@localhost/shop")
/// configuration.coalescing = WriteCoalescing()           // every eligible call
/// try await service.update(entities: [book], options: .upsert.coalesced())  // or per call
/// ```
public struct WriteCoalescing: Sendable, Equatable {
    /// How long a call may wait for others before its batch is sent. The default, 200 µs, is well under the
    /// round trip of a commit on most networks.
    public var window: Duration
    /// How many calls a batch holds at most (and never more than one statement's 10,000 rows): a full batch is sent
    /// at once.
    public var maxBatch: Int

    /// Coalescing with the given window and batch size; a negative window counts as zero, a `maxBatch` below 1 as 1.
    public init(window: Duration = .microseconds(200), maxBatch: Int = 256) {
        self.window = max(.zero, window)
        self.maxBatch = max(1, maxBatch)
    }
}
