import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The one listening connection of a service, shared by every observer and outside the request pool. It listens
/// on the channels its subscribers need (and stops listening on a channel nobody needs any more), hands each
/// notification to them, and after losing the connection reconnects, listens again and tells every subscriber
/// to fetch again, so that a change made meanwhile is not missed. When reconnecting fails for longer than the
/// patience given, subscribers receive the error.
final class ChangeListener: Sendable {
    /// What a subscriber hears.
    enum Event: Sendable {
        /// A notification's payload, on one of the subscriber's channels.
        case notification(channel: String, payload: String)
        /// The connection was lost and is listening again: changes may have been missed.
        case resumed
        /// The connection was lost and could not be opened again.
        case failed(StructPostgresError)
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
        var listening: [String: Task<Void, Never>] = [:]
        /// Channels whose LISTEN has been confirmed on the current connection.
        var confirmed: Set<String> = []
        var waitingForConfirmation: [String: [CheckedContinuation<Void, any Error>]] = [:]
        var connecting: Task<PostgresConnection, any Error>?
        var stopped = false
    }

    private let state = Mutex(State())
    private let connect: @Sendable () async throws -> PostgresConnection
    /// Sends a notification on a channel from another session than the listening one.
    private let notify: @Sendable (String) async throws -> Void
    private let reconnectPatience: Duration
    private let logger: Logger
    /// How long a new listening connection waits for its own test notification once it was committed.
    static let deliveryPatience: Duration = .seconds(3)

    init(
        reconnectPatience: Duration, logger: Logger, connect: @escaping @Sendable () async throws -> PostgresConnection,
        notify: @escaping @Sendable (String) async throws -> Void
    ) {
        self.connect = connect
        self.notify = notify
        self.reconnectPatience = reconnectPatience
        self.logger = logger
    }

    /// Registers a subscriber of `channels` and returns once the server listens on each of them, so that a fetch
    /// made afterwards cannot miss a change.
    func subscribe(_ channels: Set<String>, deliver: @escaping @Sendable (Event) -> Void) async throws -> Int {
        let id = state.withLock { state -> Int in
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
    func unsubscribe(_ id: Int) {
        let unused = state.withLock { state -> [Task<Void, Never>] in
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

    /// Closes the listening connection and fails nothing: the service is stopping.
    func stop() {
        let (connection, tasks) = state.withLock { state -> (PostgresConnection?, [Task<Void, Never>]) in
            state.stopped = true
            defer { state.listening = [:]; state.connection = nil }
            return (state.connection, Array(state.listening.values))
        }
        for task in tasks { task.cancel() }
        connection?.close().whenComplete { _ in }
    }

    // MARK: The connection

    /// The listening connection, opened on first use (one opening shared by concurrent callers).
    private func connection() async throws -> PostgresConnection {
        enum Next { case ready(PostgresConnection), wait(Task<PostgresConnection, any Error>) }
        let next = state.withLock { state -> Next in
            if let connection = state.connection, !connection.isClosed { return .ready(connection) }
            if let connecting = state.connecting { return .wait(connecting) }
            let task = Task { try await self.open() }
            state.connecting = task
            return .wait(task)
        }
        switch next {
        case .ready(let connection): return connection
        case .wait(let task): return try await task.value
        }
    }

    private func open() async throws -> PostgresConnection {
        do {
            let connection = try await connect()
            do {
                try await checkDelivery(to: connection)
            } catch {
                try? await connection.close().get()
                throw error
            }
            state.withLock { state in
                state.connection = connection
                state.connecting = nil
            }
            connection.closeFuture.whenComplete { [self] _ in connectionClosed(connection) }
            return connection
        } catch {
            state.withLock { $0.connecting = nil }
            throw error
        }
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
            "observing needs LISTEN on a session of its own, but a notification sent to the server did not reach the listening connection within \(Self.deliveryPatience) of its commit (a pooler in transaction mode, such as PgBouncer, in between?): set Configuration.listenerConnection to the server's own address")
    }

    /// Starts listening on `channel`, unless that is done on `connection` already; returns once it is confirmed.
    private func listen(_ channel: String, on connection: PostgresConnection) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Start { case confirmed, waiting, start }
            let start = state.withLock { state -> Start in
                if state.confirmed.contains(channel) { return .confirmed }
                state.waitingForConfirmation[channel, default: []].append(continuation)
                if state.listening[channel] != nil { return .waiting }
                state.listening[channel] = Task { await self.run(channel, on: connection) }
                return .start
            }
            if case .confirmed = start { continuation.resume() }
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
            for task in state.listening.values { task.cancel() }
            state.listening = [:]
            return !state.stopped && !state.subscribers.isEmpty
        }
        guard wanted else { return }
        logger.debug("the listening connection closed; reconnecting")
        Task { await reconnect() }
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
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            }
        }
        let failure = StructPostgresError(
            .connectionLost,
            "the listening connection was lost and could not be opened again within \(reconnectPatience): \(StructPostgresError.from(lastError, sql: nil).message)")
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber.deliver(.failed(failure)) }
    }
}
