import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// Every change announced for chosen tables, as it arrives: for callers who do their own work with the changes
/// (invalidate a cache by key, forward to a message bus). After a lost listening connection is opened again the
/// sequence yields ``ChangeEvent/resumed``: changes made meanwhile are not replayed. A reader that falls more than
/// its ``ChangeBuffering`` behind loses the changes beyond it, and reads ``ChangeEvent/dropped(_:)`` where they
/// were: never a silent gap. The sequence ends when the service stops.
///
/// ```swift
/// for try await event in service.changes(in: ["books"]) {
///     switch event {
///     case .change(let change): if let keys = change.keys { forget(keys) }
///     case .resumed, .dropped: forgetAll()
///     }
/// }
/// ```
public struct TableChanges: AsyncSequence, Sendable {
    /// A change, or a note that changes were missed.
    public typealias Element = ChangeEvent

    let path: OperationPath
    let tables: [String]
    let buffering: ChangeBuffering

    /// An iterator that subscribes to the tables' channels at its first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(changes: self) }

    /// The events of one reader; it unsubscribes when the sequence ends or it is released.
    public struct Iterator: AsyncIteratorProtocol {
        private let changes: TableChanges
        private var subscription: ChangeSubscription?

        init(changes: TableChanges) { self.changes = changes }

        /// The next event, as it arrives; `nil` when the service stops or the task is cancelled, or the error that
        /// ended the listening.
        public mutating func next() async throws -> ChangeEvent? {
            if subscription == nil {
                subscription = try await ChangeSubscription(changes.path, tables: changes.tables, buffering: changes.buffering)
            }
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
    /// A change of one of the tables.
    case change(TableChange)
    /// The listening connection was lost and listens again: changes made meanwhile are not in the sequence.
    case resumed
    /// The reader fell behind by more than its ``ChangeBuffering``: this many changes, announced at this point,
    /// are not in the sequence.
    case dropped(Int)
}

/// How many changes ``TableChanges`` holds for a reader that has not read them yet.
public struct ChangeBuffering: Sendable, Equatable {
    /// At most this many; beyond it, changes are dropped and counted in one ``ChangeEvent/dropped(_:)``.
    let limit: Int?

    /// At most `limit` changes (at least 1).
    public static func bounded(_ limit: Int) -> Self { Self(limit: max(1, limit)) }
    /// Every change, however far behind the reader falls: memory grows with it.
    public static let unbounded = Self(limit: nil)
    /// 10,000 changes.
    public static let `default` = bounded(10_000)
}

/// A subscription to the channels of chosen tables, whose events are held (up to the buffering's limit) until read.
final class ChangeSubscription: Sendable {
    private let listener: ChangeListener
    private let id: Int
    private let inbox: ChangeInbox

    init(_ path: OperationPath, tables: [String], buffering: ChangeBuffering) async throws {
        let channels = try await path.perform(Operation(.lookup)) { try await $0.notificationChannels(tables, entity: "changes(in:)") }
        listener = path.runtime.listener
        let inbox = ChangeInbox(limit: buffering.limit)
        self.inbox = inbox
        id = try await listener.subscribe(Set(channels.keys)) { event in
            switch event {
            case .notification(let channel, let payload):
                if let table = channels[channel], let change = TableChange(payload: payload, table: table) {
                    inbox.deliver(.change(change))
                }
            case .resumed: inbox.deliver(.resumed)
            case .failed(let error): inbox.end(.failure(error))
            case .finished: inbox.end(.success(()))
            }
        }
    }

    /// The next event, or `nil` at the end (the service stopped, or the task was cancelled); only one caller waits at
    /// a time (the sequence's iterator).
    func next() async throws -> ChangeEvent? { try await inbox.next() }

    deinit { listener.unsubscribe(id) }
}

/// The events of a ``ChangeSubscription`` not read yet: at most `limit`, then one ``ChangeEvent/dropped(_:)`` counting
/// those that did not fit.
final class ChangeInbox: Sendable {
    private struct State {
        var events: [ChangeEvent] = []
        var head = 0
        var end: Result<Void, any Error>?
        var reader: CheckedContinuation<ChangeEvent?, any Error>?

        var count: Int { events.count - head }

        mutating func append(_ event: ChangeEvent, limit: Int?) {
            guard let limit, count >= limit else { return events.append(event) }
            if case .dropped(let dropped)? = events.last, count > 0 {
                events[events.count - 1] = .dropped(dropped + 1)
            } else {
                events.append(.dropped(1))
            }
        }

        mutating func takeFirst() -> ChangeEvent? {
            guard head < events.count else { return nil }
            defer {
                head += 1
                if head > 1_024, head * 2 > events.count {
                    events.removeFirst(head)
                    head = 0
                }
            }
            return events[head]
        }

        /// The waiting reader and what it gets now, if it waits.
        mutating func answerReader() -> (CheckedContinuation<ChangeEvent?, any Error>, Result<ChangeEvent?, any Error>)? {
            guard let reader else { return nil }
            self.reader = nil
            if let event = takeFirst() { return (reader, .success(event)) }
            return (reader, end.map { $0.map { nil } } ?? .success(nil))
        }
    }

    private let state = Guarded(State())
    private let limit: Int?

    init(limit: Int?) { self.limit = limit }

    func deliver(_ event: ChangeEvent) {
        let answer = state.withLock { state in
            state.append(event, limit: limit)
            return state.answerReader()
        }
        if let (reader, result) = answer { reader.resume(with: result) }
    }

    func end(_ result: Result<Void, any Error>) {
        let answer = state.withLock { state in
            state.end = state.end ?? result
            return state.answerReader()
        }
        if let (reader, result) = answer { reader.resume(with: result) }
    }

    func next() async throws -> ChangeEvent? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ChangeEvent?, any Error>) in
                let now = state.withLock { state -> Result<ChangeEvent?, any Error>? in
                    if let event = state.takeFirst() { return .success(event) }
                    if let end = state.end { return end.map { nil } }
                    if Task.isCancelled { return .success(nil) }
                    state.reader = continuation
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let reader = state.withLock { state -> CheckedContinuation<ChangeEvent?, any Error>? in
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume(returning: nil)
        }
    }
}
