import Logging
import PostgresNIO

extension PostgresService {
    /// Waits until the server accepts a connection with `settings`, trying every quarter second, for
    /// container start-ups. Wrong credentials or a missing database fail at once: waiting cannot fix them.
    /// - Throws: ``StructPostgresError`` `connectionLost` with the last reason when `timeout` passes.
    public static func waitUntilAvailable(
        _ settings: ConnectionSettings, timeout: Duration,
        logger: Logger = Logger(label: "StructPostgres", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        var configuration = try settings.connectionConfiguration()
        var lastError = StructPostgresError(.connectionLost, "no attempt made")
        while true {
            let left = deadline - ContinuousClock.now
            let millis = max(100, min(2_000, Int64(left.components.seconds * 1000)))
            configuration.options.connectTimeout = .milliseconds(millis)
            do {
                let connection = try await PostgresConnection.connect(
                    on: PostgresClient.defaultEventLoopGroup.any(), configuration: configuration, id: 0, logger: logger
                ).get()
                try? await connection.close()
                return
            } catch {
                lastError = StructPostgresError.from(error, sql: nil)
                // 28xxx: authentication; 3D000: no such database. The server is up and will keep refusing.
                if let state = lastError.sqlState, state.hasPrefix("28") || state == "3D000" { throw lastError }
            }
            guard ContinuousClock.now + .milliseconds(250) < deadline else {
                throw StructPostgresError(
                    .connectionLost, "\(settings) did not accept connections within \(timeout): \(lastError.message)")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }
}
