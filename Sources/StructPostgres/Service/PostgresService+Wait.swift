import Logging
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension PostgresService {
    /// Waits until the server accepts a connection with `settings`, trying every quarter second, for
    /// container start-ups. Wrong credentials or a missing database fail at once: waiting cannot fix them.
    /// - Throws: ``StructPostgresError`` `connectionLost` with the last reason when `timeout` passes.
    public static func waitUntilAvailable(
        _ settings: ConnectionSettings, timeout: Duration,
        logger: Logger = Logger(label: "StructPostgres", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        var lastError = StructPostgresError(.connectionLost, "no attempt made")
        while true {
            let left = deadline - ContinuousClock.now
            do {
                let connection = try await settings.connect(
                    timeout: Swift.max(.milliseconds(100), Swift.min(.seconds(2), left)), logger: logger)
                try? await connection.close()
                return
            } catch let error as StructPostgresError {
                lastError = error
                // 28xxx: authentication; 3D000: no such database. The server is up and will keep refusing.
                if let state = error.sqlState, state.hasPrefix("28") || state == "3D000" { throw error }
                if error.code == .invalidConfiguration { throw error }
            }
            guard ContinuousClock.now + .milliseconds(250) < deadline else {
                throw StructPostgresError(
                    .connectionLost, "\(settings) did not accept connections within \(timeout): \(lastError.message)")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }
}
