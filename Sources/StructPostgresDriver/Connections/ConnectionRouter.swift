import Logging
import PostgresNIO
import Synchronization
import StructPostgresCore

/// Where each operation's connection comes from. Writes, transactions and pinned reads go to the primary: the
/// first listed host that fits `target_session_attrs`, found again after it fails (a failover). Reads outside a
/// transaction go to the replicas in turn, skipping those that are down or lag too far, and to the primary when
/// none is left.
package final class ConnectionRouter: Sendable {
    /// One pool per listed host of the connection settings.
    let hosts: [ConnectionPool]
    package let replicas: [Replica]
    let attributes: TargetSessionAttributes
    let logger: Logger
    private let chosen: Guarded<Int?>
    /// A primary was found once: a later search that finds none is a failover in progress, worth waiting for.
    private let found = Atomic(false)
    private let search = Guarded(PrimarySearch())
    private let searchIDs = Atomic(0)
    private let turn = Atomic(0)
    private let health: ReplicaHealth?

    package init(configuration: PostgresConfiguration, telemetry: Telemetry, background: BackgroundTasks) throws {
        let connection = configuration.connection
        let endpoints = connection.endpoints
        attributes = connection.targetSessionAttributes
        logger = configuration.logger
        let failover = endpoints.count > 1
        hosts = try endpoints.map {
            try ConnectionPool(
                settings: connection.at($0), options: configuration.pool, logger: configuration.logger,
                telemetry: telemetry, background: background, failsFast: failover)
        }
        replicas = try configuration.replicas.flatMap { settings in
            try settings.endpoints.map {
                Replica(
                    pool: try ConnectionPool(
                        settings: settings.at($0), options: configuration.pool, logger: configuration.logger,
                        telemetry: telemetry, background: background, failsFast: true))
            }
        }
        // One host taken as it is needs no check.
        chosen = Guarded(endpoints.count == 1 && attributes == .any ? 0 : nil)
        health =
            replicas.isEmpty
            ? nil
            : ReplicaHealth(
                maxLag: configuration.maxReplicaLag, interval: configuration.replicaCheckInterval, logger: configuration.logger)
    }

    /// Every pool, replicas included.
    var pools: [ConnectionPool] { hosts + replicas.map(\.pool) }

    /// How many pools there are, replicas included (asked by every call: no array made).
    package var poolCount: Int { hosts.count + replicas.count }

    /// The primary's pool: the host chosen before, or the first that fits, looked for now.
    package func primary() async throws -> ConnectionPool {
        if let index = chosen.withLock({ $0 }) { return hosts[index] }
        let index = try await searchOnce()
        chosen.withLock { $0 = index }
        found.store(true, ordering: .relaxed)
        return hosts[index]
    }

    /// One search for the primary at a time, in the task of the caller that started it; callers arriving meanwhile
    /// wait for its answer. A search ended by its own caller's cancellation answers nobody else: one of them searches.
    private func searchOnce() async throws -> Int {
        while true {
            let leads = search.withLock { search in
                defer { search.running = true }
                return !search.running
            }
            if leads {
                let result: Result<Int, any Error>
                do { result = .success(try await discover()) } catch { result = .failure(error) }
                let waiting = search.withLock { search in
                    defer { search = PrimarySearch() }
                    return Array(search.waiting.values)
                }
                let cancelledItself = Task.isCancelled && (try? result.get()) == nil
                for continuation in waiting { continuation.resume(with: cancelledItself ? .failure(PrimarySearch.Again()) : result) }
                // Its caller was cancelled: that, not what the search ran into meanwhile, ends the call.
                if cancelledItself { throw StructPostgresError.from(CancellationError(), sql: nil) }
                return try result.get()
            }
            let id = searchIDs.add(1, ordering: .relaxed).newValue
            do {
                return try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                        let waits = search.withLock { search -> Bool in
                            guard search.running, !Task.isCancelled else { return false }
                            search.waiting[id] = continuation
                            return true
                        }
                        if !waits { continuation.resume(throwing: Task.isCancelled ? CancellationError() : PrimarySearch.Again()) }
                    }
                } onCancel: {
                    search.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: CancellationError())
                }
            } catch is PrimarySearch.Again {
                continue
            }
        }
    }

    /// The pool for a read outside a transaction: the next usable replica, or the primary.
    package func reader() async throws -> (ConnectionPool, Replica?) {
        let usable = replicas.filter(\.isUsable)
        if usable.isEmpty { return (try await primary(), nil) }
        let next = usable[turn.add(1, ordering: .relaxed).oldValue % usable.count]
        return (next.pool, next)
    }

    /// After an operation on the primary failed: forgets the choice when the error says the host is gone or no
    /// longer writable, so that the next operation looks again.
    /// - Returns: whether the primary will be looked for again.
    @discardableResult
    package func primaryFailed(_ error: StructPostgresError) -> Bool {
        guard hosts.count > 1 || attributes != .any, Self.meansHostGone(error) || error.sqlState == "25006" else { return false }
        let forgot = chosen.withLock { chosen -> Bool in
            defer { chosen = nil }
            return chosen != nil
        }
        if forgot { logger.info("looking for the primary again", metadata: ["reason": "\(error.message)"]) }
        return true
    }

    /// The primary may move: more than one host is listed, or a role is asked for.
    package var primaryMayMove: Bool { hosts.count > 1 || attributes != .any }

    /// A primary was found once: a later search that finds none is a failover in progress, worth waiting for.
    package var primaryFoundBefore: Bool { found.load(ordering: .relaxed) }

    /// After a write on the primary was refused as read-only (SQLSTATE 25006): whether the host is no longer
    /// the primary (read-only, in recovery, or unreachable when asked), as in a switchover, and the primary is
    /// to be looked for again. `false` when the host is still writable: the transaction itself was read-only.
    package func refusedByAFormerPrimary(_ pool: ConnectionPool) async -> Bool {
        guard hosts.count > 1 || attributes != .any, hosts.contains(where: { $0 === pool }) else { return false }
        let role = try? await HostRole.read(pool)
        guard role.map({ !$0.fits(attributes == .any ? .readWrite : attributes) }) ?? true else { return false }
        let forgot = chosen.withLock { chosen -> Bool in
            defer { chosen = nil }
            return chosen != nil
        }
        if forgot { logger.info("looking for the primary again", metadata: ["reason": "\(pool.endpoint) refused a write as read-only"]) }
        return true
    }

    /// Whether `error` says the server is unreachable or shutting down (not a failed statement).
    static func meansHostGone(_ error: StructPostgresError) -> Bool {
        if error.code == .connectionLost { return true }
        guard let state = error.sqlState else { return false }
        return ["57P01", "57P02", "57P03"].contains(state) || state.hasPrefix("08")
    }

    /// Tries the hosts in order and returns the first that fits ``attributes`` (`prefer-standby`: a standby,
    /// then any host).
    private func discover() async throws -> Int {
        var reasons: [String] = []
        var roles: [Int: HostRole] = [:]
        for (index, pool) in hosts.enumerated() {
            do {
                let role = try await HostRole.read(pool)
                roles[index] = role
                if role.fits(attributes) { return index }
                reasons.append("\(pool.endpoint) is \(role)")
            } catch {
                reasons.append("\(pool.endpoint): \((error as? StructPostgresError)?.message ?? "\(error)")")
            }
        }
        if attributes == .preferStandby, let any = roles.keys.min() { return any }
        throw StructPostgresError(
            .connectionLost,
            "no host fits target_session_attrs=\(attributes.rawValue): \(reasons.joined(separator: "; "))")
    }

    /// Runs every pool, and the replicas' health checks, until cancelled.
    package func run() async {
        await withDiscardingTaskGroup { group in
            for pool in pools { group.addTask { await pool.run() } }
            if let health {
                group.addTask { [replicas] in await health.run(replicas) }
            }
        }
    }

    /// Waits until every pool runs.
    package func waitUntilStarted() async {
        for pool in pools { await pool.started.wait() }
    }

    package var connectionsInUse: Int { pools.reduce(0) { $0 + $1.connectionsInUse } }
}

/// What a host is, read on a connection of its own: in recovery (a standby) or not, read-only or not.
struct HostRole: Sendable, CustomStringConvertible {
    let inRecovery: Bool
    let readOnly: Bool

    static func read(_ pool: ConnectionPool) async throws -> HostRole {
        try await pool.withDedicatedConnection { connection in
            let rows = try await connection.sendingOnEventLoop {
                try await connection.query(
                    "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: pool.logger
                ).get().rows
            }
            guard let (recovery, readOnly) = try rows.first?.decode((Bool, Bool).self) else {
                throw StructPostgresError(.server, "\(pool.endpoint) did not say whether it is in recovery")
            }
            return HostRole(inRecovery: recovery, readOnly: readOnly)
        }
    }

    func fits(_ attributes: TargetSessionAttributes) -> Bool {
        switch attributes {
        case .any: true
        case .readWrite: !readOnly
        case .readOnly: readOnly
        case .primary: !inRecovery
        case .standby, .preferStandby: inRecovery
        }
    }

    var description: String { inRecovery ? "a standby (in recovery)" : readOnly ? "read-only" : "a read-write primary" }
}

/// The search for the primary under way: whether one runs, and the callers waiting for its answer.
private struct PrimarySearch {
    /// The search ended without an answer for the waiting callers (its caller was cancelled): look again.
    struct Again: Error {}

    var running = false
    var waiting: [Int: CheckedContinuation<Int, any Error>] = [:]
}
