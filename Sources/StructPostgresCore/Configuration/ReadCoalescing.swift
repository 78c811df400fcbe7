/// How concurrent point reads of one shape are gathered into one statement (see the *Performance* article).
///
/// A fetch outside a transaction whose filter is one equality on one column (`find(_:id:)`, `fetchOne` on a unique
/// key, `fetch(where: .equal("bookID", id))`), with the same sort, limit and loading as other such fetches in
/// flight, joins them: their keys are sent as one array, each key's rows found as its own query would find them
/// (`CROSS JOIN LATERAL`, so a limit applies per key), relationships loaded once for the batch, and each caller gets
/// its own rows. A lone call is sent at once, and every caller sees a state committed between its call and its
/// return. A batch that fails is sent again call by call, so that an error reaches only the calls it concerns.
///
/// ```swift
/// var configuration = try PostgresConfiguration(url: "postgres://app@localhost/shop")
/// configuration.readCoalescing = ReadCoalescing(window: .microseconds(100))  // the default is on
/// configuration.readCoalescing = nil                                         // off
/// ```
public struct ReadCoalescing: Sendable, Equatable {
    /// How long a call may wait for others before its batch is sent.
    public var window: Duration
    /// How many calls a batch holds at most: a full batch is sent at once.
    public var maxBatch: Int

    /// Coalescing with the given window and batch size; a negative window counts as zero, a `maxBatch` below 1 as 1.
    public init(window: Duration = .microseconds(200), maxBatch: Int = 256) {
        self.window = max(.zero, window)
        self.maxBatch = max(1, maxBatch)
    }
}
