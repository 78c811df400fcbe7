import NIOCore
import NIOPosix
import PostgresNIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StructPostgresCore

/// Opens the TCP connection under a ``PostgresConnection``: with the settings' dead-peer detection on the socket
/// (``ConnectionSettings/tcpKeepalive``, ``ConnectionSettings/tcpUserTimeout``), and a handshake tried again every
/// second while the host does not answer, so that a host back after a silent cut is reached within a second, not at
/// TCP's next retransmission of its first SYN (1, 3, 7 s...). Each attempt runs until the deadline; the first to
/// connect wins and any other that connects later is closed. A host that answers with a refusal ends it at once.
///
/// **Works around PostgresNIO 1.33.2**, whose connections set no socket option but `TCP_NODELAY`:
/// `PostgresConnection.Configuration.Options` has none to give, nor has `PostgresClient`'s; a statement on a connection
/// whose server vanished waits for TCP's retransmissions to give up (about 15 minutes) or for ever (no keepalive). The
/// channel is made here with NIO's `ClientBootstrap`, as PostgresNIO makes its own, and handed to PostgresNIO with its
/// public `Configuration(establishedChannel:)`. No upstream issue found. Canary:
/// `aPostgresNIOConnectionHasNoKeepalive`; once PostgresNIO sets these options itself, this type can go.
struct SocketConnector {
    /// How long an attempt waits for an answer before another is started beside it.
    static let retryEvery = TimeAmount.seconds(1)

    let settings: ConnectionSettings

    /// Connects to the settings' host and port on `loop`, giving up at `deadline`.
    /// - Throws: ``StructPostgresError`` `connectionLost` saying why (`timed out`, `connection refused`); its
    ///   ``StructPostgresError/underlying`` is ``ServerNotAnswering`` when the host did not answer at all.
    func connect(on loop: any EventLoop, until deadline: NIODeadline) -> EventLoopFuture<any Channel> {
        let options = socketOptions
        let (host, port) = (settings.host, settings.port)
        let handshake = Handshake(loop: loop, deadline: deadline) { remaining in
            var bootstrap = ClientBootstrap(group: loop).connectTimeout(remaining)
            for (option, value) in options { bootstrap = bootstrap.channelOption(option, value: value) }
            return bootstrap.connect(host: host, port: port)
        }
        loop.execute { handshake.attempt() }
        return handshake.promise.futureResult
    }

    /// The socket options of the settings' dead-peer detection, set before the socket connects.
    var socketOptions: [(ChannelOptions.Types.SocketOption, SocketOptionValue)] {
        var options: [(ChannelOptions.Types.SocketOption, SocketOptionValue)] = []
        func tcp(_ name: Int32) -> ChannelOptions.Types.SocketOption { .init(level: .tcp, name: .init(rawValue: name)) }
        if let keepalive = settings.tcpKeepalive {
            options.append((ChannelOptions.Types.SocketOption(level: .socket, name: .so_keepalive), 1))
            if let idle = keepalive.idle {
                options.append((tcp(Self.keepaliveIdle), SocketOptionValue(ConnectionSettings.wholeSeconds(idle))))
            }
            if let interval = keepalive.interval {
                options.append((tcp(TCP_KEEPINTVL), SocketOptionValue(ConnectionSettings.wholeSeconds(interval))))
            }
            if let count = keepalive.count { options.append((tcp(TCP_KEEPCNT), SocketOptionValue(count))) }
        } else {
            options.append((ChannelOptions.Types.SocketOption(level: .socket, name: .so_keepalive), 0))
        }
        #if os(Linux)
        if let timeout = settings.tcpUserTimeout {
            options.append((tcp(Int32(TCP_USER_TIMEOUT)), SocketOptionValue(ConnectionSettings.milliseconds(timeout))))
        }
        #endif
        return options
    }

    #if canImport(Darwin)
    static let keepaliveIdle = TCP_KEEPALIVE
    #else
    static let keepaliveIdle = TCP_KEEPIDLE
    #endif

    /// Whether `error`, of an attempt to connect, means the host did not answer (a timeout, no route), rather than
    /// refused.
    static func meansNoAnswer(_ error: any Error) -> Bool {
        switch error {
        case let error as PSQLError:
            return error.code == .connectionError && error.underlying.map(meansNoAnswer) == true
        case let error as NIOConnectionError:
            return !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { meansNoAnswer($0.error) }
        case let error as ChannelError:
            if case .connectTimeout = error { return true }
            return false
        case let error as IOError:
            return [ETIMEDOUT, EHOSTUNREACH, ENETUNREACH].contains(error.errnoCode)
        case let error as StructPostgresError:
            return error.underlying is ServerNotAnswering
        default:
            return false
        }
    }
}

/// Marks a ``StructPostgresError`` of a connection attempt the host did not answer (see
/// ``SocketConnector/meansNoAnswer(_:)``).
struct ServerNotAnswering: Error, Sendable {}

/// The attempts of one handshake, on one event loop: a new one every ``SocketConnector/retryEvery`` while none has
/// connected, each until the deadline.
private final class Handshake: @unchecked Sendable {
    let loop: any EventLoop
    let deadline: NIODeadline
    let promise: EventLoopPromise<any Channel>
    private let start: (TimeAmount) -> EventLoopFuture<any Channel>
    private var pending = 0
    private var done = false
    private var next: Scheduled<Void>?

    init(loop: any EventLoop, deadline: NIODeadline, start: @escaping (TimeAmount) -> EventLoopFuture<any Channel>) {
        self.loop = loop
        self.deadline = deadline
        self.start = start
        promise = loop.makePromise()
    }

    /// Starts an attempt, and schedules the next one unless the deadline comes first.
    func attempt() {
        loop.assertInEventLoop()
        next = nil
        guard !done else { return }
        let remaining = deadline - .now()
        guard remaining > .zero else { return finish(.failure(ChannelError.connectTimeout(.zero))) }
        pending += 1
        start(remaining).hop(to: loop).whenComplete { self.ended($0) }
        if remaining > SocketConnector.retryEvery {
            next = loop.scheduleTask(in: SocketConnector.retryEvery) { self.attempt() }
        }
    }

    private func ended(_ result: Result<any Channel, any Error>) {
        pending -= 1
        switch result {
        case .success(let channel):
            if done { channel.close(promise: nil) } else { finish(.success(channel)) }
        case .failure(let error):
            // A refusal is the host's answer: no other attempt will fare better.
            if !done && (!SocketConnector.meansNoAnswer(error) || pending == 0 && next == nil) { finish(.failure(error)) }
        }
    }

    private func finish(_ result: Result<any Channel, any Error>) {
        done = true
        next?.cancel()
        next = nil
        switch result {
        case .success(let channel): promise.succeed(channel)
        case .failure(let error):
            var failure = StructPostgresError(.connectionLost, StructPostgresError.connectFailure(error))
            if SocketConnector.meansNoAnswer(error) { failure.underlying = ServerNotAnswering() }
            promise.fail(failure)
        }
    }
}
