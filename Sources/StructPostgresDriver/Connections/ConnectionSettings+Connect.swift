import Logging
import NIOCore
import PostgresNIO
import StructPostgresCore

extension ConnectionSettings {
    /// Opens one connection outside any pool, giving up after `timeout`. Over TCP its socket is opened by
    /// ``SocketConnector``, with the settings' keepalive and `TCP_USER_TIMEOUT`.
    /// - Throws: ``StructPostgresError`` naming these settings (never the password) and the reason; its
    ///   ``StructPostgresError/underlying`` is ``ServerNotAnswering`` when the server did not answer in time.
    package func connect(timeout: Duration, id: PostgresConnection.ID = 0, logger: Logger) async throws -> PostgresConnection {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        do {
            var configuration: PostgresConnection.Configuration
            let loop: any EventLoop
            if usesUnixSocket {
                configuration = try connectionConfiguration()
                loop = PostgresClient.defaultEventLoopGroup.any()
            } else {
                try validateConnectionOptions()
                let channel = try await SocketConnector(settings: self).connect(
                    on: PostgresClient.defaultEventLoopGroup.any(), until: deadline
                ).get()
                do {
                    configuration = try connectionConfiguration(over: channel)
                } catch {
                    try? await channel.close()
                    throw error
                }
                loop = channel.eventLoop
            }
            // What is left of the timeout bounds the startup (TLS, authentication).
            configuration.options.connectTimeout = max(.milliseconds(1), deadline - .now())
            return try await PostgresConnection.connect(on: loop, configuration: configuration, id: id, logger: logger).get()
        } catch {
            var failure = StructPostgresError.from(error, sql: nil)
            if failure.code != .invalidConfiguration && failure.sqlState == nil { failure.code = .connectionLost }
            if SocketConnector.meansNoAnswer(error) { failure.underlying = ServerNotAnswering() }
            failure.message = "cannot connect to \(self): \(failure.message)"
            throw failure
        }
    }
}
