import _ConnectionPoolModule
import Logging
import PostgresNIO
import StructPostgresCore

extension LeaseStateMachine.Actions {
    /// These actions and `other`'s, without answers to call `id` (the caller answers it itself).
    func merged(_ other: Self, dropping id: Int) -> Self {
        var merged = self
        merged.hand += other.hand.filter { $0.to != id }
        merged.fail += other.fail.filter { $0.0 != id }
        merged.requestUpstream += other.requestUpstream
        merged.releaseUpstream += other.releaseUpstream
        merged.armTimer = other.armTimer ?? armTimer
        return merged
    }
}

/// A lease the machine asks of PostgresNIO's pool; its answer goes back to the machine.
struct UpstreamRequest: ConnectionRequestProtocol {
    let id: Int
    let pool: ConnectionPool

    func complete(with result: Result<ConnectionLease<PostgresConnection>, ConnectionPoolError>) {
        pool.answered(id, result)
    }
}

/// PostgresNIO's pool checks an idle connection every 30 seconds with `SELECT 1`, as `PostgresClient` does.
struct KeepAlive: ConnectionKeepAliveBehavior {
    let logger: Logger
    var keepAliveFrequency: Duration? { .seconds(30) }

    func runKeepAlive(for connection: PostgresConnection) async throws {
        _ = try await connection.sendingOnEventLoop { try await connection.query("SELECT 1", logger: logger).get() }
    }
}
