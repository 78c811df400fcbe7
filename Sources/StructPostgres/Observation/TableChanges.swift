/// Every change announced for chosen tables, as it arrives: for callers who do their own work with the changes
/// (invalidate a cache by key, forward to a message bus). After a lost listening connection is opened again the
/// sequence yields ``ChangeEvent/resumed``: changes made meanwhile are not replayed.
///
/// ```swift
/// for try await event in service.changes(in: ["books"]) {
///     if case .change(let change) = event, let keys = change.keys { cache.remove(keys) }
/// }
/// ```
public struct TableChanges: AsyncSequence, Sendable {
    public typealias Element = ChangeEvent

    let path: OperationPath
    let tables: [String]

    public func makeAsyncIterator() -> Iterator { Iterator(changes: self) }

    public struct Iterator: AsyncIteratorProtocol {
        private let changes: TableChanges
        private var subscription: ChangeSubscription?

        init(changes: TableChanges) { self.changes = changes }

        public mutating func next() async throws -> ChangeEvent? {
            if subscription == nil { subscription = try await ChangeSubscription(changes.path, tables: changes.tables) }
            guard let event = try await subscription!.next() else {
                subscription = nil
                return nil
            }
            return event
        }
    }
}

/// What ``TableChanges`` yields.
public enum ChangeEvent: Sendable, Equatable {
    case change(TableChange)
    /// The listening connection was lost and listens again: changes made meanwhile are not in the sequence.
    case resumed
}

/// A subscription to the channels of chosen tables, whose events are buffered until read.
final class ChangeSubscription: Sendable {
    private let listener: ChangeListener
    private let id: Int
    private let events: AsyncThrowingStream<ChangeEvent, any Error>

    init(_ path: OperationPath, tables: [String]) async throws {
        let channels = try await path.perform(Operation(.fetch)) { try await $0.notificationChannels(tables, entity: "changes(in:)") }
        let (events, continuation) = AsyncThrowingStream<ChangeEvent, any Error>.makeStream()
        self.events = events
        listener = path.runtime.listener
        id = try await listener.subscribe(Set(channels.keys)) { event in
            switch event {
            case .notification(let channel, let payload):
                if let table = channels[channel], let change = TableChange(payload: payload, table: table) { continuation.yield(.change(change)) }
            case .resumed: continuation.yield(.resumed)
            case .failed(let error): continuation.finish(throwing: error)
            }
        }
    }

    /// The next event; only one caller waits at a time (the sequence's iterator).
    func next() async throws -> ChangeEvent? {
        var iterator = events.makeAsyncIterator()
        do {
            return try await iterator.next()
        } catch where Task.isCancelled {
            return nil
        }
    }

    deinit { listener.unsubscribe(id) }
}
