import Foundation
import StructPostgres
import Testing

private struct Item: StoredModel, Equatable {
    static let table = "items"
    let uuid: UUID
    var name: String
}

/// The same rows as `items`, read through a view that makes every scan sleep for 30 seconds.
private struct SlowItem: StoredModel {
    static let table = "slow_items"
    let uuid: UUID
    var name: String
}

/// A cancelled task stops its statement on the server, fails at once with `queryCancelled`, and never commits.
@Suite(.tags(.timed)) struct CancellationTests {
    private static let schema = [
        "CREATE TABLE items (uuid uuid PRIMARY KEY, name text NOT NULL)",
        "CREATE VIEW slow_items AS SELECT uuid, name FROM items WHERE pg_sleep(30) IS NOT NULL",
    ]

    /// Waits until a backend other than the caller's runs a statement containing `marker`.
    private func waitUntilRunning(_ marker: String, _ service: PostgresService) async throws {
        for _ in 0..<500 {
            if try await backends(running: marker, service) > 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no backend started running \(marker)")
    }

    private func backends(running marker: String, _ service: PostgresService) async throws -> Int {
        let rows = try await service.query(
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
              AND query LIKE '%' || \(marker) || '%'
            """)
        return Int(try rows[0].decode(Int64.self))
    }

    /// Cancels `task` once `marker` runs on the server; returns how long the task took to fail after the
    /// cancellation and how long the backend took to stop the statement.
    private func cancel<T: Sendable>(
        _ task: Task<T, any Error>, runningFor marker: String, _ service: PostgresService
    ) async throws -> (error: StructPostgresError?, failed: Duration, stopped: Duration) {
        try await waitUntilRunning(marker, service)
        let cancelled = ContinuousClock.now
        task.cancel()
        let outcome = await task.result
        let failed = ContinuousClock.now - cancelled
        var stopped = Duration.seconds(60)
        for _ in 0..<1_000 {
            if try await backends(running: marker, service) == 0 {
                stopped = ContinuousClock.now - cancelled
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        var thrown: StructPostgresError?
        do { _ = try outcome.get() } catch { thrown = error as? StructPostgresError ?? StructPostgresError(.client, "\(error)") }
        return (thrown, failed, stopped)
    }

    @Test func aCancelledFetchStopsItsQueryOnTheServer() async throws {
        try await withTables(Self.schema[0], Self.schema[1]) { service, _ in
            try await service.update(entities: [Item(uuid: UUID(), name: "one")])
            let fetch = Task { try await service.fetch(SlowItem.self) }
            let (error, failed, stopped) = try await cancel(fetch, runningFor: "slow_items", service)
            print("cancelled fetch: failed \(failed) after the cancellation; the backend's query was gone after \(stopped)")
            #expect(error?.code == .queryCancelled, "\(String(describing: error))")
            #expect(
                error?.message.contains("cancelled on the server") == true,
                "the server acknowledged the close: \(String(describing: error))")
            #expect(failed < .seconds(2))
            #expect(stopped < .seconds(2))
            // The pool goes on: the cancelled connection was closed, and the next call opens or takes another.
            #expect(try await service.fetch(Item.self).count == 1)
            #expect(service.connectionsInUse == 0)
        }
    }

    @Test func aCancelledRawQueryStopsOnTheServer() async throws {
        try await withTables(Self.schema[0]) { service, _ in
            let query = Task { try await service.query("SELECT pg_sleep(30) AS structpg_raw_sleep") }
            let (error, failed, stopped) = try await cancel(query, runningFor: "structpg_raw_sleep", service)
            print("cancelled raw query: failed \(failed) after the cancellation; the backend's query was gone after \(stopped)")
            #expect(error?.code == .queryCancelled, "\(String(describing: error))")
            #expect(failed < .seconds(2))
            #expect(stopped < .seconds(2))
            #expect(try await rowCount("items", service) == 0)
        }
    }

    @Test func aTransactionCancelledDuringASlowStatementRollsBackAndSendsNothingMore() async throws {
        try await withTables(Self.schema[0]) { service, log in
            let (a, b) = (Item(uuid: UUID(), name: "A"), Item(uuid: UUID(), name: "B"))
            let transaction = Task {
                try await service.transaction { tx in
                    try await tx.update(entities: [a])
                    _ = try await tx.query("SELECT pg_sleep(10) AS structpg_tx_sleep")
                    try await tx.update(entities: [b])
                }
            }
            let (error, failed, stopped) = try await cancel(transaction, runningFor: "structpg_tx_sleep", service)
            print("cancelled transaction: failed \(failed) after the cancellation; the backend's query was gone after \(stopped)")
            #expect(error?.code == .queryCancelled, "\(String(describing: error))")
            #expect(failed < .seconds(2))
            #expect(stopped < .seconds(2))
            #expect(try await rowCount("items", service) == 0)
            #expect(!log.all.contains("COMMIT"))
        }
    }

    /// A closure that catches the cancellation and goes on: its later statements and the COMMIT are not sent.
    @Test func aTransactionWhoseClosureSwallowsTheCancellationStillRollsBack() async throws {
        try await withTables(Self.schema[0]) { service, log in
            let (a, b) = (Item(uuid: UUID(), name: "A"), Item(uuid: UUID(), name: "B"))
            let laterError = SendableBox<StructPostgresError?>(nil)
            let transaction = Task {
                try await service.transaction { tx in
                    try await tx.update(entities: [a])
                    _ = try? await tx.query("SELECT pg_sleep(3) AS structpg_swallowed_sleep")
                    do {
                        try await tx.update(entities: [b])
                    } catch {
                        laterError.value = error as? StructPostgresError
                    }
                }
            }
            let (error, _, stopped) = try await cancel(transaction, runningFor: "structpg_swallowed_sleep", service)
            #expect(error?.code == .queryCancelled, "\(String(describing: error))")
            #expect(laterError.value?.code == .queryCancelled)
            #expect(stopped < .seconds(2))
            #expect(try await rowCount("items", service) == 0)
            #expect(!log.all.contains("COMMIT"))
            #expect(log.all.filter { $0.hasPrefix("INSERT") }.count == 1, "\(log.all)")
        }
    }

    /// Cancelled between two statements (no statement running): the next one and the COMMIT are not sent.
    @Test func aTransactionCancelledBetweenStatementsSendsNothingMore() async throws {
        try await withTables(Self.schema[0]) { service, log in
            let (a, b) = (Item(uuid: UUID(), name: "A"), Item(uuid: UUID(), name: "B"))
            let (written, signal) = AsyncStream<Void>.makeStream()
            let (proceed, go) = AsyncStream<Void>.makeStream()
            let transaction = Task {
                try await service.transaction { tx in
                    try await tx.update(entities: [a])
                    signal.yield()
                    for await _ in proceed { break }
                    try await tx.update(entities: [b])
                }
            }
            for await _ in written { break }
            transaction.cancel()
            go.yield()
            let outcome = await transaction.result
            #expect(throws: StructPostgresError.self) { try outcome.get() }
            #expect((try? outcome.get()) == nil)
            var code: StructPostgresError.Code?
            if case .failure(let error as StructPostgresError) = outcome { code = error.code }
            #expect(code == .queryCancelled)
            let remaining = try await rowCount("items", service)
            #expect(remaining == 0)
            #expect(!log.all.contains("COMMIT"))
            #expect(service.connectionsInUse == 0)
        }
    }
}

final class SendableBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
