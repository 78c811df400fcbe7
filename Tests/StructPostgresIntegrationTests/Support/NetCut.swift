import Foundation
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

/// A row of the tests that cut the network.
struct CutTally: StoredModel, Equatable {
    static let table = "cut_tallies"
    let uuid: UUID
    var count: Int32
}

enum NetCut {
    static let schema = "CREATE TABLE cut_tallies (uuid uuid PRIMARY KEY, count integer NOT NULL)"

    /// Why the tests that cut a link are skipped here, or `nil`.
    static let unavailable: String? = SilentlyCuttableCluster.unavailableReason

    /// libpq's options that shorten the dead-peer bound to about 4 s, as a test can afford: keepalive probes after
    /// 1 s of silence, every second, and TCP_USER_TIMEOUT 4 s.
    static let shortBound = "keepalives_idle=1&keepalives_interval=1&keepalives_count=3&tcp_user_timeout=4000"

    /// The settings of `server` over its link, with the URL's `options` (libpq's spelling, so that the URL parameters
    /// are what the tests go through).
    static func settings(_ server: SilentlyCuttableCluster, options: String?) throws -> ConnectionSettings {
        let base = server.settings
        let url =
            "postgres://postgres:\(base.password ?? "")@\(base.host):\(base.port)/postgres?sslmode=disable"
            + (options.map { "&" + $0 } ?? "")
        return try ConnectionSettings(url: url)
    }

    /// Runs `body` with a service on `server`'s link, with the cut_tallies table.
    static func withService<T>(
        _ server: SilentlyCuttableCluster, options: String? = shortBound, pool: PoolOptions,
        _ body: (PostgresService) async throws -> T
    ) async throws -> T {
        let configuration = PostgresService.Configuration(connection: try settings(server, options: options), pool: pool)
        return try await PostgresService.withService(configuration: configuration) { service in
            try await service.execute(unsafeSQL: schema)
            return try await body(service)
        }
    }

    /// Calls `probe` until it succeeds; returns how long that took from `since`.
    static func firstSuccess(since: ContinuousClock.Instant, within limit: Duration = .seconds(30), _ probe: () async throws -> Void) async
        -> Duration?
    {
        while ContinuousClock.now - since < limit {
            do {
                try await probe()
                return ContinuousClock.now - since
            } catch {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        return nil
    }
}

/// Calls started in unstructured tasks, each timed: a call that never ends shows as one still running, instead of
/// hanging the test.
final class TimedCalls: Sendable {
    struct Ended: Sendable {
        let name: String
        let started: ContinuousClock.Instant
        let took: Duration
        let error: StructPostgresError?
    }

    private let ended = Mutex<[Ended]>([])
    private let running = Atomic(0)

    var all: [Ended] { ended.withLock { $0 } }
    var stillRunning: Int { running.load(ordering: .relaxed) }

    func start(_ name: String, _ call: @escaping @Sendable () async throws -> Void) {
        running.add(1, ordering: .relaxed)
        Task {
            let started = ContinuousClock.now
            var failure: StructPostgresError?
            do { try await call() } catch {
                failure = error as? StructPostgresError ?? StructPostgresError(.client, "\(error)")
            }
            let took = ContinuousClock.now - started
            ended.withLock { $0.append(Ended(name: name, started: started, took: took, error: failure)) }
            running.subtract(1, ordering: .relaxed)
        }
    }

    /// Waits until every call has ended, at most `limit`.
    func waitForAll(within limit: Duration) async throws {
        let deadline = ContinuousClock.now + limit
        while stillRunning > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    }

    var longest: Duration { all.map(\.took).max() ?? .zero }

    func report(_ title: String) {
        print("\(title): \(all.count) calls, the longest \(longest)")
        for call in all.sorted(by: { $0.took > $1.took }) {
            print("  \(call.name): \(call.took) \(call.error.map { "\($0.code): \($0.message)" } ?? "succeeded")")
        }
    }
}

/// Writers that each upsert one new row per call until stopped, keeping a ledger: the keys the service acknowledged,
/// and the calls that failed, with their errors.
final class WriteLedger: Sendable {
    let acknowledged = Mutex<[UUID]>([])
    let failed = Mutex<[(UUID, StructPostgresError)]>([])
    let longest = Mutex<Duration>(.zero)
    let stopping = Atomic(false)

    func run(_ service: PostgresService, writers: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var round: Int32 = 0
                    while !self.stopping.load(ordering: .relaxed) {
                        round += 1
                        let key = UUID()
                        let started = ContinuousClock.now
                        do {
                            if writer.isMultiple(of: 4) {
                                try await service.transaction { tx in try await tx.update(entities: [CutTally(uuid: key, count: round)]) }
                            } else {
                                try await service.update(entities: [CutTally(uuid: key, count: round)])
                            }
                            self.acknowledged.withLock { $0.append(key) }
                        } catch {
                            let failure = error as? StructPostgresError ?? StructPostgresError(.client, "\(error)")
                            self.failed.withLock { $0.append((key, failure)) }
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                        let took = ContinuousClock.now - started
                        self.longest.withLock { $0 = max($0, took) }
                    }
                }
            }
        }
    }

    /// Checks the ledger against the table once the link is back: every acknowledged write is there, and a failed
    /// write that may have been sent says its outcome is unknown. Returns the unknown outcomes, and how many of them
    /// were committed after all.
    func check(_ service: PostgresService) async throws -> (unknown: Int, committedAnyway: Int) {
        let stored = Set(try await service.fetch(CutTally.self).map(\.uuid))
        let acknowledged = self.acknowledged.withLock { $0 }
        let lost = acknowledged.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged writes lost")
        var unknown = 0
        var committedAnyway = 0
        for (key, error) in failed.withLock({ $0 }) {
            let saysUnknown = error.message.contains("unknown")
            if saysUnknown { unknown += 1 }
            if stored.contains(key) {
                committedAnyway += 1
                #expect(saysUnknown, "a write that failed but was committed says its outcome is unknown: \(error)")
            }
            #expect([.connectionLost, .poolTimeout, .deadlineExceeded].contains(error.code), "\(error)")
        }
        return (unknown, committedAnyway)
    }
}
