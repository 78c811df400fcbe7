import Foundation
import Logging
import PostgresNIO
import Synchronization
import StructPostgresCore

/// The one listening connection of a service, shared by every observer and outside the request pool. It listens
/// on the channels its subscribers need (and stops listening on a channel nobody needs any more), hands each
/// notification to them, and after losing the connection reconnects, listens again and tells every subscriber
/// to fetch again, so that a change made meanwhile is not missed. When reconnecting fails for longer than the
/// patience given, subscribers receive the error. Its tasks run in the service's ``BackgroundTasks``; when the service
/// stops, every subscriber hears ``Event/finished``.
package final class ChangeListener: Sendable {
    /// What a subscriber hears.
    package enum Event: Sendable {
        /// A notification's payload, on one of the subscriber's channels.
        case notification(channel: String, payload: String)
        /// The connection was lost and is listening again: changes may have been missed.
        case resumed
        /// The connection was lost and could not be opened again.
        case failed(StructPostgresError)
        /// The service stopped: nothing more will arrive.
        case finished
    }

    private struct Subscriber {
        let channels: Set<String>
        let deliver: @Sendable (Event) -> Void
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        var connection: PostgresConnection?
        /// The task listening on each channel, on the current connection.
        var listening: [String: BackgroundTasks.Handle] = [:]
        /// Channels whose LISTEN has been confirmed on the current connection.
        var confirmed: Set<String> = []
        var waitingForConfirmation: [String: [CheckedContinuation<Void, any Error>]] = [:]
        /// Callers waiting for the connection being opened; `nil` while none is.
        var connecting: [CheckedContinuation<PostgresConnection, any Error>]?
        var stopped = false
    }

    private let state = Guarded(State())
    private let connect: @Sendable () async throws -> PostgresConnection
    /// Sends a notification on a channel from another session than the listening one.
    private let notify: @Sendable (String) async throws -> Void
    private let reconnectPatience: Duration
    private let logger: Logger
    private let background: BackgroundTasks
    /// How long a new listening connection waits for its own test notification once it was committed.
    static let deliveryPatience: Duration = .seconds(3)

    package init(
        reconnectPatience: Duration, logger: Logger, background: BackgroundTasks,
        connect: @escaping @Sendable () async throws -> PostgresConnection, notify: @escaping @Sendable (String) async throws -> Void
    ) {
        self.background = background
        self.connect = connect
        self.notify = notify
        self.reconnectPatience = reconnectPatience
        self.logger = logger
    }

    /// Registers a subscriber of `channels` and returns once the server listens on each of them, so that a fetch
    /// made afterwards cannot miss a change.
    package func subscribe(_ channels: Set<String>, deliver: @escaping @Sendable (Event) -> Void) async throws -> Int {
        let id = try state.withLock { state -> Int in
            if state.stopped { throw Self.stoppedError }
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(channels: channels, deliver: deliver)
            return state.nextID
        }
        do {
            let connection = try await connection()
            for channel in channels { try await listen(channel, on: connection) }
            return id
        } catch {
            unsubscribe(id)
            throw StructPostgresError.from(error, sql: "LISTEN")
        }
    }

    /// Removes a subscriber; a channel nobody listens to any more is no longer listened on.
    package func unsubscribe(_ id: Int) {
        let unused = state.withLock { state -> [BackgroundTasks.Handle] in
            guard let subscriber = state.subscribers.removeValue(forKey: id) else { return [] }
            let stillWanted = Set(state.subscribers.values.flatMap(\.channels))
            return subscriber.channels.subtracting(stillWanted).compactMap { channel in
                state.confirmed.remove(channel)
                return state.listening.removeValue(forKey: channel)
            }
        }
        for task in unused { task.cancel() }
    }

    /// How many channels the server has confirmed listening on for this service.
    var channelCount: Int { state.withLock { $0.confirmed.count } }

    /// How many subscribers there are (each observation or change feed that has subscribed).
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The service is stopping: closes the listening connection (returning once it is closed), tells every subscriber
    /// ``Event/finished`` and refuses new ones.
    package func stop() async {
        let (connection, tasks, subscribers, waiting) = state.withLock { state in
            state.stopped = true
            defer {
                state.listening = [:]
                state.connection = nil
                state.subscribers = [:]
                state.waitingForConfirmation = [:]
            }
            return (
                state.connection, Array(state.listening.values), Array(state.subscribers.values),
                state.waitingForConfirmation.values.flatMap { $0 }
            )
        }
        for task in tasks { task.cancel() }
        for continuation in waiting { continuation.resume(throwing: Self.stoppedError) }
        for subscriber in subscribers { subscriber.deliver(.finished) }
        try? await connection?.close()
    }

    package static var stoppedError: StructPostgresError { BackgroundTasks.stopped("no change will be observed") }

    // MARK: The connection

    /// The listening connection, opened on first use (one opening shared by concurrent callers).
    private func connection() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
            enum Next { case ready(PostgresConnection), failed(any Error), wait, open }
            let next = state.withLock { state -> Next in
                if state.stopped { return .failed(Self.stoppedError) }
                if let connection = state.connection, !connection.isClosed { return .ready(connection) }
                let opening = state.connecting != nil
                state.connecting = (state.connecting ?? []) + [continuation]
                return opening ? .wait : .open
            }
            switch next {
            case .ready(let connection): continuation.resume(returning: connection)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait: break
            case .open:
                if !background.start({ await self.open() }) { opened(.failure(Self.stoppedError)) }
            }
        }
    }

    /// Opens the listening connection for the callers waiting for it.
    private func open() async {
        do {
            let connection = try await connect()
            do {
                try await checkDelivery(to: connection)
            } catch {
                try? await connection.close().get()
                throw error
            }
            connection.closeFuture.whenComplete { [self] _ in connectionClosed(connection) }
            opened(.success(connection))
        } catch {
            opened(.failure(error))
        }
    }

    private func opened(_ result: Result<PostgresConnection, any Error>) {
        let (waiting, unwanted) = state.withLock { state -> ([CheckedContinuation<PostgresConnection, any Error>], PostgresConnection?) in
            defer { state.connecting = nil }
            if case .success(let connection) = result {
                if state.stopped { return (state.connecting ?? [], connection) }
                state.connection = connection
            }
            return (state.connecting ?? [], nil)
        }
        unwanted?.close().whenComplete { _ in }
        for continuation in waiting { continuation.resume(with: unwanted == nil ? result : .failure(Self.stoppedError)) }
    }

    /// Checks that a notification sent from another session reaches `connection`: behind a pooler in transaction
    /// mode (PgBouncer), `LISTEN` succeeds on a server session that the pooler then hands to other clients, and
    /// every notification is lost without an error. Such a connection is refused by name instead. The notification
    /// is sent through the pool (which may make it wait for a connection); once it is committed, it arrives within
    /// milliseconds on a connection of its own, and ``deliveryPatience`` is allowed.
    private func checkDelivery(to connection: PostgresConnection) async throws {
        let channel = "structpg_probe_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let delivered = try await connection.listen(on: channel) { notifications in
            try await self.notify(channel)
            return try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for try await _ in notifications { return true }
                    return false
                }
                group.addTask {
                    try await Task.sleep(for: Self.deliveryPatience)
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
        }
        guard !delivered else { return }
        throw StructPostgresError(
            .invalidConfiguration,
            "observing needs LISTEN on a session of its own, but a notification sent to the server did not reach the listening connection within \(Self.deliveryPatience) of its commit (a pooler in transaction mode, such as PgBouncer, in between?): set Configuration.listenerConnection to the server's own address"
        )
    }

    /// Starts listening on `channel`, unless that is done on `connection` already; returns once it is confirmed.
    private func listen(_ channel: String, on connection: PostgresConnection) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Start { case confirmed, waiting, start, stopped }
            let start = state.withLock { state -> Start in
                if state.confirmed.contains(channel) { return .confirmed }
                state.waitingForConfirmation[channel, default: []].append(continuation)
                if state.listening[channel] != nil { return .waiting }
                if state.stopped { return .stopped }
                guard let handle = background.startCancellable({ await self.run(channel, on: connection) }) else { return .stopped }
                state.listening[channel] = handle
                return .start
            }
            switch start {
            case .confirmed: continuation.resume()
            case .stopped:
                let waiting = state.withLock { $0.waitingForConfirmation.removeValue(forKey: channel) ?? [] }
                for continuation in waiting { continuation.resume(throwing: Self.stoppedError) }
            case .waiting, .start: break
            }
        }
    }

    /// Listens on `channel` until cancelled or the connection closes, delivering what arrives.
    private func run(_ channel: String, on connection: PostgresConnection) async {
        do {
            try await connection.listen(on: channel) { notifications in
                let waiting = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
                    state.confirmed.insert(channel)
                    return state.waitingForConfirmation.removeValue(forKey: channel) ?? []
                }
                for continuation in waiting { continuation.resume() }
                for try await notification in notifications {
                    for deliver in subscribers(of: channel) { deliver(.notification(channel: channel, payload: notification.payload)) }
                }
            }
        } catch {
            let waiting = state.withLock { $0.waitingForConfirmation.removeValue(forKey: channel) ?? [] }
            for continuation in waiting { continuation.resume(throwing: error) }
        }
    }

    private func subscribers(of channel: String) -> [@Sendable (Event) -> Void] {
        state.withLock { state in state.subscribers.values.filter { $0.channels.contains(channel) }.map(\.deliver) }
    }

    // MARK: Reconnecting

    private func connectionClosed(_ connection: PostgresConnection) {
        let wanted = state.withLock { state -> Bool in
            guard state.connection === connection || state.connection == nil else { return false }
            state.connection = nil
            state.confirmed = []
            for handle in state.listening.values { handle.cancel() }
            state.listening = [:]
            return !state.stopped && !state.subscribers.isEmpty
        }
        guard wanted else { return }
        logger.debug("the listening connection closed; reconnecting")
        _ = background.start { await self.reconnect() }
    }

    /// Opens a new connection, trying with growing pauses for ``reconnectPatience``, listens on every channel
    /// subscribers need, then tells them to fetch again; or tells them it failed.
    private func reconnect() async {
        let deadline = ContinuousClock.now + reconnectPatience
        var pause = Duration.milliseconds(50)
        var lastError: any Error = StructPostgresError(.connectionLost, "the listening connection closed")
        while ContinuousClock.now < deadline, !state.withLock({ $0.stopped || $0.subscribers.isEmpty }) {
            do {
                let connection = try await connection()
                let channels = state.withLock { Set($0.subscribers.values.flatMap(\.channels)) }
                for channel in channels { try await listen(channel, on: connection) }
                for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber.deliver(.resumed) }
                return
            } catch {
                lastError = error
                do { try await Task.sleep(for: pause) } catch { return }
                pause = min(pause * 2, .seconds(2))
            }
        }
        if state.withLock({ $0.stopped }) { return }
        let failure = StructPostgresError(
            .connectionLost,
            "the listening connection was lost and could not be opened again within \(reconnectPatience): \(StructPostgresError.from(lastError, sql: nil).message)"
        )
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber.deliver(.failed(failure)) }
    }
}
