import Logging
import PostgresNIO
import Synchronization
import StructPostgresCore

/// A read replica's pool and whether reads may go to it now.
package final class Replica: Sendable {
    package enum State: Sendable, Equatable {
        case up
        /// Unreachable, or failed a read: skipped until a check reaches it again.
        case down(String)
        /// Further behind the primary than ``PostgresConfiguration/maxReplicaLag``.
        case lagging(Duration)
    }

    let pool: ConnectionPool
    private let current = Guarded(State.up)
    /// WAL the replica had received but not replayed when first seen so, and when: the lag is how long replaying it
    /// takes (PostgreSQL's `pg_last_xact_replay_timestamp()` is null until a transaction is replayed, and after an
    /// idle spell measures the idleness).
    private let pending = Guarded<(lsn: UInt64, since: ContinuousClock.Instant)?>(nil)

    init(pool: ConnectionPool) { self.pool = pool }

    var state: State { current.withLock { $0 } }

    /// How long the WAL received but not yet replayed has been waiting, as far as the checks have seen.
    func lag(received: UInt64, replayed: UInt64) -> Duration {
        pending.withLock { pending in
            let now = ContinuousClock.now
            guard received > replayed else {
                pending = nil
                return .zero
            }
            if let waiting = pending, replayed < waiting.lsn { return now - waiting.since }
            pending = (received, now)
            return .zero
        }
    }
    var isUsable: Bool { state == .up }

    package func set(_ state: State, logger: Logger) {
        let previous = current.withLock { current -> State in
            defer { current = state }
            return current
        }
        switch (previous, state) {
        case (.up, .up), (.down, .down), (.lagging, .lagging): return
        default: break
        }
        switch state {
        case .up: logger.info("replica back in use", metadata: ["replica": "\(pool.endpoint)"])
        case .down(let why): logger.warning("replica skipped: unreachable", metadata: ["replica": "\(pool.endpoint)", "reason": "\(why)"])
        case .lagging(let lag): logger.warning("replica skipped: lagging", metadata: ["replica": "\(pool.endpoint)", "lag": "\(lag)"])
        }
    }
}

/// Checks the replicas every interval: one that is down is tried again, and with a lag bound, each one's replay
/// lag is measured (see ``Replica/lag(received:replayed:)``).
struct ReplicaHealth: Sendable {
    let maxLag: Duration?
    let interval: Duration
    let logger: Logger

    func run(_ replicas: [Replica]) async {
        while !Task.isCancelled {
            await withDiscardingTaskGroup { group in
                for replica in replicas where maxLag != nil || replica.state != .up {
                    group.addTask { await check(replica) }
                }
            }
            try? await Task.sleep(for: interval)
        }
    }

    func check(_ replica: Replica) async {
        do {
            let (received, replayed) = try await replica.pool.withDedicatedConnection { connection in
                let rows = try await connection.sendingOnEventLoop {
                    try await connection.query(
                        """
                        SELECT coalesce(pg_last_wal_receive_lsn(), '0/0')::text, coalesce(pg_last_wal_replay_lsn(), '0/0')::text
                        """, logger: logger
                    ).get().rows
                }
                return try rows.first?.decode((String, String).self) ?? ("0/0", "0/0")
            }
            let behind = replica.lag(received: LSN(received), replayed: LSN(replayed))
            if let maxLag, behind > maxLag {
                replica.set(.lagging(behind), logger: logger)
            } else {
                replica.set(.up, logger: logger)
            }
        } catch {
            replica.set(.down((error as? StructPostgresError)?.message ?? "\(error)"), logger: logger)
        }
    }
}

/// A WAL position, `X/Y` as PostgreSQL prints it.
func LSN(_ text: String) -> UInt64 {
    let parts = text.split(separator: "/").map { UInt64($0, radix: 16) ?? 0 }
    return parts.count == 2 ? parts[0] << 32 | parts[1] : 0
}
