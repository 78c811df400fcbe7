import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization
import StructPostgresCore

/// Tells when the server has finished a statement: its `ReadyForQuery`, not its `CommandComplete`.
///
/// **Works around PostgresNIO 1.33.2**, which reports a statement's success at `CommandComplete`
/// (`ExtendedQueryStateMachine.commandCompletedReceived`, the `.succeedQuery` and `.forwardStreamComplete`
/// actions). Outside an explicit transaction PostgreSQL commits at the protocol's `Sync`, after
/// `CommandComplete`: that is when deferred constraints are checked and a synchronous standby is waited for.
/// An error raised by that commit arrives after the statement has been reported done; PostgresNIO then drops it
/// (`ConnectionStateMachine.errorReceived`, `.extendedQuery` with `isComplete`: `closeConnectionAndCleanup(
/// .unexpectedBackendMessage(.error(...)))`) and closes the connection, and a connection lost during that commit
/// is not noticed at all. Other drivers had the same defect: rust-postgres#832 (fixed by #833, waiting for
/// `ReadyForQuery`), porsager/postgres#1117. No PostgresNIO issue found. Canary: `ReadyForQueryCanaryTests` fails once PostgresNIO reports
/// the commit's error itself; this type can then go.
///
/// The watcher is a channel handler placed in front of PostgresNIO's (PostgresNIO does not expose its
/// channel; it is read by reflection, see ``PostgresConnection/channelForWatching``). It reads the frames of
/// the backend messages going by (see ``BackendMessageScanner``) and changes nothing. Everything it keeps is
/// read and written on the connection's event loop.
final class ReadyForQueryWatcher: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// How a statement's end was seen.
    enum Outcome {
        /// `ReadyForQuery` came after the statement's completion with no error between: committed, if the
        /// statement committed by itself.
        case ready
        /// An error came between the completion and `ReadyForQuery`: raised by the commit.
        case failedAtCommit([UInt8: String])
        /// The connection closed before `ReadyForQuery`.
        case lost
        /// The watcher cannot tell (it lost track of the frames).
        case unknown
    }

    let eventLoop: any EventLoop
    private var scanner = BackendMessageScanner()
    /// `ReadyForQuery` messages seen.
    private var ready = 0
    /// The value of `ready` when the last statement completed: that statement's end is `ready` number
    /// `readyAtCompletion + 1`.
    private var readyAtCompletion = 0
    /// A statement completed, its `ReadyForQuery` has not come yet.
    private var completedUnready = false
    /// An error between a completion and its `ReadyForQuery`, with the number of that `ReadyForQuery`.
    private var errorAtCommit: (fields: [UInt8: String], ready: Int)?
    private var closed = false
    /// The number of the message with which the server ended the session: a `FATAL` error of one of
    /// ``sessionEndings``.
    private var sessionEndedAt: Int?
    private var sessionEnding = false
    private var waiters: [(ready: Int, promise: EventLoopPromise<Outcome>)] = []

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !scanner.desynchronized {
            let synchronized = scanner.scan(unwrapInboundIn(data)) { handle($0) }
            if !synchronized { resolveWaiters { _ in .unknown } }
            // The server sends nothing after the error that ends a session: it is the last message read.
            if sessionEnding, sessionEndedAt == nil { sessionEndedAt = scanner.messages }
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        resolveWaiters { ready in self.errorAtCommit.flatMap { $0.ready == ready ? .failedAtCommit($0.fields) : nil } ?? .lost }
        context.fireChannelInactive()
    }

    private func handle(_ event: BackendMessageScanner.Event) {
        switch event {
        case .completed:
            readyAtCompletion = ready
            completedUnready = true
        case .error(let fields):
            if completedUnready { errorAtCommit = (fields, ready + 1) }
            let severity = fields[UInt8(ascii: "V")] ?? fields[UInt8(ascii: "S")]
            if severity == "FATAL", let state = fields[UInt8(ascii: "C")], Self.sessionEndings.contains(state) { sessionEnding = true }
        case .ready:
            ready += 1
            completedUnready = false
            resolveWaiters(upTo: ready) { ready in
                self.errorAtCommit.flatMap { $0.ready == ready ? .failedAtCommit($0.fields) : nil } ?? .ready
            }
        }
    }

    private func resolveWaiters(upTo limit: Int = .max, _ outcome: (Int) -> Outcome) {
        guard !waiters.isEmpty else { return }
        var waiting: [(ready: Int, promise: EventLoopPromise<Outcome>)] = []
        for waiter in waiters {
            if waiter.ready <= limit { waiter.promise.succeed(outcome(waiter.ready)) } else { waiting.append(waiter) }
        }
        waiters = waiting
    }

    /// How the statement that completed last ended: `.now` when its `ReadyForQuery` has been read already (the
    /// usual case: it comes in the same packet as the completion), `.later` when it has not. On the event loop.
    func outcomeOfLastStatement() -> Pending {
        eventLoop.assertInEventLoop()
        let target = readyAtCompletion + 1
        if let errorAtCommit, errorAtCommit.ready == target { return .now(.failedAtCommit(errorAtCommit.fields)) }
        if ready >= target { return .now(.ready) }
        if scanner.desynchronized { return .now(.unknown) }
        if closed { return .now(.lost) }
        let promise = eventLoop.makePromise(of: Outcome.self)
        waiters.append((target, promise))
        return .later(promise.futureResult)
    }

    /// The SQLSTATEs with which PostgreSQL ends a session of its own accord, whatever the client sent: shutdown
    /// (`57P01`), another process's crash (`57P02`), not accepting connections (`57P03`), idle timeouts (`57P05`,
    /// `25P03`). A pooler's own errors (PgBouncer's `08P01` when its server connection failed) are not among them:
    /// the pooler may have sent the statement on.
    static let sessionEndings: Set<String> = ["57P01", "57P02", "57P03", "57P05", "25P03"]

    /// A point in the messages read, taken just before a statement is written. On the event loop.
    var mark: Int {
        eventLoop.assertInEventLoop()
        return scanner.messages
    }

    /// Whether the server ended the session without reading what was written after `mark`: the message that ended
    /// it came before the mark, or was the first after it. The server answers every message of a statement it
    /// reads (`ParseComplete`, `BindComplete`) before anything else, and sends what it holds back before the error
    /// that ends a session; so nothing of that statement ran. On the event loop.
    func endedSessionBeforeReading(since mark: Int) -> Bool {
        eventLoop.assertInEventLoop()
        guard let sessionEndedAt else { return false }
        return sessionEndedAt <= mark + 1
    }

    enum Pending {
        case now(Outcome)
        case later(EventLoopFuture<Outcome>)
    }
}

extension ReadyForQueryWatcher {
    private struct Installed: @unchecked Sendable {
        weak var connection: PostgresConnection?
        let watcher: ReadyForQueryWatcher?
    }

    private static let installed = Guarded<[ObjectIdentifier: Installed]>([:])

    /// The watcher of `connection`, placed on first use; `nil` when it cannot be placed (PostgresNIO's channel
    /// is out of reach). On the connection's event loop, while no statement is in flight on it.
    static func of(_ connection: PostgresConnection, logger: Logger) -> ReadyForQueryWatcher? {
        connection.eventLoop.assertInEventLoop()
        let id = ObjectIdentifier(connection)
        if let known = installed.withLock({ $0[id] }), known.connection === connection { return known.watcher }
        let watcher = install(on: connection, logger: logger)
        installed.withLock { $0[id] = Installed(connection: connection, watcher: watcher) }
        connection.closeFuture.whenComplete { [weak connection] _ in
            installed.withLock { entries in
                if let entry = entries[id], entry.connection == nil || entry.connection === connection { entries[id] = nil }
            }
        }
        return watcher
    }

    private static func install(on connection: PostgresConnection, logger: Logger) -> ReadyForQueryWatcher? {
        guard let channel = connection.channelForWatching else {
            logger.warning("cannot read PostgresNIO's channel: each statement is confirmed by a second one, which costs a round trip")
            return nil
        }
        let watcher = ReadyForQueryWatcher(eventLoop: channel.eventLoop)
        do {
            let pipeline = channel.pipeline.syncOperations
            if let tls = try? pipeline.handler(type: NIOSSLClientHandler.self) {
                try pipeline.addHandler(watcher, position: .after(tls))
            } else {
                try pipeline.addHandler(watcher, position: .first)
            }
            return watcher
        } catch {
            logger.warning(
                "cannot watch the connection's messages: each statement is confirmed by a second one", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Tests: statements sent from this task are confirmed the slow way, as without a watcher.
    @TaskLocal static var forceFallback = false
}

extension PostgresConnection {
    /// PostgresNIO's channel of this connection, which it keeps `internal`: read by reflection. `nil` once a
    /// PostgresNIO release renames it (a test then fails: `ReadyForQueryCanaryTests`).
    var channelForWatching: (any Channel)? {
        Mirror(reflecting: self).descendant("channel") as? any Channel
    }
}
