import PostgresNIO
import StructPostgresCore

/// Connections a pool opens outside PostgresNIO's pool, with its host's settings.
extension ConnectionPool {
    /// Opens one connection outside the pool, so that a pool that keeps failing to connect reports why.
    func diagnoseConnection() async throws {
        let connection = try await settings.connect(timeout: connectTimeout, logger: logger)
        try? await connection.close()
    }

    /// A connection of its own, outside the pool, closed after `body`: for work that changes session state
    /// or must not wait for the pool (the migrator).
    package func withDedicatedConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await settings.connect(timeout: connectTimeout, logger: logger)
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
