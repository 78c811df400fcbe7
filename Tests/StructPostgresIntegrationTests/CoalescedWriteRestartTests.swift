import Foundation
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

private struct Pulse: StoredModel {
    static let table = "pulses"
    /// Each row takes 10 ms to insert, so that the batch seen running when the restart begins still runs when the
    /// server stops.
    static let create = """
        CREATE TABLE pulses (uuid uuid PRIMARY KEY, value integer NOT NULL);
        CREATE FUNCTION slowly() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN NEW; END $$;
        CREATE TRIGGER slowly BEFORE INSERT ON pulses FOR EACH ROW EXECUTE FUNCTION slowly();
        """
    var uuid: UUID
    var value: Int
}

/// A server restart while coalesced batches are being written: a server of its own, restarted with `pg_ctl`.
@Suite(
    .serialized, .tags(.timed), .timeLimit(.minutes(2)),
    .enabled(
        if: ProcessInfo.processInfo.environment["DATABASE_URL"] == nil,
        "the server to restart is started next to the local cluster; DATABASE_URL is set"))
struct CoalescedWriteRestartTests {
    private struct Outcome {
        let key: UUID
        var written: Bool
        var result: UpsertResult?
        var error: StructPostgresError.Code?
        var afterRestart: Bool
    }

    private final class Flags: Sendable {
        let stopping = Atomic(false)
        let restarted = Atomic(false)
        let outcomes = Mutex<[Outcome]>([])
    }

    /// Upserts new rows one call at a time until stopped, noting each call's outcome.
    private func writeUntilStopped(_ service: PostgresService, _ flags: Flags) async throws {
        while !flags.stopping.load(ordering: .relaxed) {
            let pulse = Pulse(uuid: UUID(), value: 1)
            var outcome = Outcome(key: pulse.uuid, written: false, result: nil, error: nil, afterRestart: false)
            do {
                let result = try await service.update(entities: [pulse])
                outcome.result = result
                outcome.written = result == UpsertResult(inserted: 1)
            } catch {
                outcome.error = (error as? StructPostgresError)?.code ?? .client
            }
            outcome.afterRestart = flags.restarted.load(ordering: .relaxed)
            flags.outcomes.withLock { [outcome] in $0.append(outcome) }
            if outcome.error != nil { try await Task.sleep(for: .milliseconds(5)) }
        }
    }

    /// Returns once the server runs an insert into `pulses`.
    private func waitForABatchOnTheServer(_ service: PostgresService) async throws {
        for _ in 0..<1_000 {
            let running = try await service.query(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%INSERT INTO%pulses%' AND pid <> pg_backend_pid()"
            )[0].decode(Int.self)
            if running > 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no insert into pulses ran on the server within 10 s")
    }

    @Test func aRestartMidBatchGivesEachCallerSuccessOrAnErrorAndEverySuccessHasItsRow() async throws {
        let cluster = try LocalPostgresCluster.start()
        defer { cluster.stop() }
        var configuration = PostgresService.Configuration(connection: cluster.settings, pool: PoolOptions(maxConnections: 8))
        configuration.coalescing = WriteCoalescing()
        try await PostgresService.withService(configuration: configuration) { service in
            try await service.execute(unsafeSQL: Pulse.create)
            let flags = Flags()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<64 {
                    group.addTask { try await writeUntilStopped(service, flags) }
                }
                try await Task.sleep(for: .milliseconds(500))
                // Restarts while a batch is being written, which a loaded machine may not have started by now.
                try await waitForABatchOnTheServer(service)
                try await onThread { try cluster.restart() }
                flags.restarted.store(true, ordering: .relaxed)
                for _ in 0..<500 where !flags.outcomes.withLock({ $0.contains { $0.afterRestart && $0.written } }) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await Task.sleep(for: .milliseconds(300))
                flags.stopping.store(true, ordering: .relaxed)
                try await group.waitForAll()
            }

            let all = flags.outcomes.withLock { $0 }
            let written = all.filter(\.written)
            let failed = all.filter { $0.error != nil }
            print(
                "restart mid-batch: \(written.count) calls written (\(written.filter { !$0.afterRestart }.count) before the restart returned), \(failed.count) failed: \(Set(failed.compactMap(\.error)))"
            )
            let neither = all.filter { !$0.written && $0.error == nil }
            #expect(neither.isEmpty, "each caller either inserted its row or got an error; others got \(neither.map(\.result))")
            #expect(!failed.isEmpty, "the restart reached calls under way")
            #expect(written.contains { $0.afterRestart }, "calls succeed again after the restart")
            let stored = Set(try await service.fetch(Pulse.self).map(\.uuid))
            let lost = written.filter { !stored.contains($0.key) }
            #expect(lost.isEmpty, "\(lost.count) calls reported success without their row")
        }
    }
}
