import NIOCore
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif
import StructPostgresCore

/// Finds out, before a cancelled statement's connection is closed, whether the server still acknowledges what the
/// client sends: only then does the close (and a cancel request) reach it. During a silent cut it does not, and the
/// statement may go on running on the server; the cancellation's error then says so (see
/// ``StatementCanceller/cancelled(reached:sql:)``).
///
/// It writes a `Flush` message (five bytes, which the server answers with nothing) below PostgresNIO, from the
/// position of the connection's ``ReadyForQueryWatcher``, and reads the socket's `TCP_INFO` until nothing sent is
/// unacknowledged. The connection is closed right after, so PostgresNIO never learns of the message.
enum DeliveryProbe {
    /// How long the server's acknowledgement is waited for at most.
    static let patience = Duration.milliseconds(500)

    /// Calls `done` with `true` once the server's TCP has acknowledged everything sent on `connection` (at once on a
    /// Unix-domain socket), `false` when it has not within ``patience``, `nil` when this cannot be told (not Linux,
    /// PostgresNIO's channel or the watcher out of reach, the connection closed already). On the connection's event loop.
    static func confirm(on connection: PostgresConnection, _ done: @escaping @Sendable (Bool?) -> Void) {
        #if os(Linux)
        guard let channel = connection.channelForWatching else { return done(nil) }
        channel.eventLoop.execute {
            guard channel.isActive else { return done(nil) }
            if case .unixDomainSocket = channel.remoteAddress { return done(true) }
            guard let provider = channel as? any SocketOptionProvider,
                let context = try? channel.pipeline.syncOperations.context(handlerType: ReadyForQueryWatcher.self)
            else {
                return done(nil)
            }
            context.writeAndFlush(NIOAny(ByteBuffer(bytes: [UInt8(ascii: "H"), 0, 0, 0, 4])), promise: nil)
            poll(provider, on: channel.eventLoop, until: .now() + TimeAmount(patience), done)
        }
        #else
        done(nil)
        #endif
    }

    #if os(Linux)
    private static func poll(
        _ provider: any SocketOptionProvider, on loop: any EventLoop, until deadline: NIODeadline,
        _ done: @escaping @Sendable (Bool?) -> Void
    ) {
        provider.getTCPInfo().whenComplete { result in
            switch result {
            case .success(let info) where info.tcpi_unacked == 0:
                done(true)
            case .success:
                guard .now() < deadline else { return done(false) }
                loop.scheduleTask(in: .milliseconds(2)) { poll(provider, on: loop, until: deadline, done) }
            case .failure:
                done(nil)
            }
        }
    }
    #endif
}
