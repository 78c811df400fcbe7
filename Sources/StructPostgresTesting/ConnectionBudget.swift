import StructPostgres
import Synchronization

/// The test server's connections, shared out among the databases tests create, so that a suite run in parallel
/// against an ordinary server (`max_connections = 100`, as docker compose's `postgres` image, a CI service container
/// or a shared development server gives) queues its tests instead of failing them with `too many clients`.
///
/// The budget is read from the server once: `max_connections`, less the connections reserved for superusers (and,
/// from PostgreSQL 16, `reserved_connections`), less those already open by others, less the harness's own admin
/// pool and a margin. Each ``TestDatabase`` holds a share from its creation until it is dropped (by default what
/// ``TestPostgres/withDatabase(pool:configure:_:)`` needs: its pool, the listening connection and one more); a test
/// asking more than the whole budget gets the whole budget.
actor ConnectionBudget {
    static let shared = ConnectionBudget()

    /// Connections left for the other clients of a shared server, and for a test's extra services.
    static let margin = 10

    private var capacity: Int?
    private var used = 0
    private var waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Takes `count` connections of the budget, waiting for earlier tests to give theirs back; returns what it took.
    func take(_ count: Int, admin: ConnectionSettings, adminPool: Int) async throws -> Int {
        let capacity = try await capacity(admin, adminPool: adminPool)
        let count = min(max(1, count), capacity)
        if waiting.isEmpty && used + count <= capacity {
            used += count
            return count
        }
        await withCheckedContinuation { waiting.append((count, $0)) }
        return count
    }

    func giveBack(_ count: Int) {
        used -= count
        while let first = waiting.first, let capacity, used + first.count <= capacity {
            waiting.removeFirst()
            used += first.count
            first.continuation.resume()
        }
    }

    private func capacity(_ admin: ConnectionSettings, adminPool: Int) async throws -> Int {
        if let capacity { return capacity }
        let rows = try await AdminConnections.shared.run(on: admin) {
            try await $0.query(
                """
                SELECT current_setting('max_connections')::int
                       - current_setting('superuser_reserved_connections')::int
                       - coalesce(current_setting('reserved_connections', true)::int, 0),
                       (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend')
                """
            ).map { try $0.decode((Int32, Int32).self) }
        }
        let (available, open) = rows[0]
        let measured = max(8, Int(available) - Int(open) - adminPool - Self.margin)
        capacity = measured
        return measured
    }

    /// Connections a database holds, given back once however many times it is dropped.
    final class Share: Sendable {
        let count: Int
        private let held = Atomic(true)
        init(_ count: Int) { self.count = count }
        /// `true` the first time only.
        func release() -> Bool { held.exchange(false, ordering: .relaxed) }
    }
}
