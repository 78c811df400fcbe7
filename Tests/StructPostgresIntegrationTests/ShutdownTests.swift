import Foundation
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import StructPostgresTesting
import Synchronization
import Testing

private struct Memo: StoredModel, Equatable {
    static let table = "memos"
    let uuid: UUID
    var text: String
}

/// How a consumer of the service ended.
private enum Ending: Sendable, CustomStringConvertible {
    case finished
    case failed(StructPostgresError)
    case other(String)

    static func of(_ body: () async throws -> Void) async -> Ending {
        do {
            try await body()
            return .finished
        } catch let error as StructPostgresError {
            return .failed(error)
        } catch {
            return .other("\(type(of: error)): \(error)")
        }
    }

    var isNamed: Bool { if case .other = self { false } else { true } }
    var description: String {
        switch self {
        case .finished: "finished"
        case .failed(let error): "failed: \(error)"
        case .other(let text): "other: \(text)"
        }
    }
}

/// `run()` owns every task of the service: when it returns, observations, change feeds, streams and coalesced
/// batches have ended, each caller with a result or a named error, and no connection is left open.
@Suite struct ShutdownTests {
    /// `body`'s value, or a failure naming `what` after `seconds`.
    private func within<T: Sendable>(_ seconds: Int, _ what: String, _ body: @escaping @Sendable () async -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let value = try await group.next() ?? nil else {
                Issue.record("\(what) did not end within \(seconds) s")
                throw CancellationError()
            }
            return value
        }
    }

    @Test func stoppingTheServiceEndsObservationsChangeFeedsStreamsAndACoalescedBurst() async throws {
        let database = try await TestDatabase.create()
        var configuration = PostgresService.Configuration(connection: database.settings, pool: PoolOptions(maxConnections: 4))
        if database.settings.poolMode == .transaction { configuration.listenerConnection = try ConnectionSettings(url: database.directURL) }
        configuration.coalescing = WriteCoalescing()
        let service = try PostgresService(configuration: configuration)
        let runner = Task { try await service.run() }
        await service.runtime.router.waitUntilStarted()

        try await service.execute(unsafeSQL: "CREATE TABLE memos (uuid uuid PRIMARY KEY, text text NOT NULL)")
        try await service.installChangeNotifications(on: ["memos"])
        // More rows than the first two batches of the stream's cursor (256 + 8,192), so that it must fetch after the stop.
        try await service.update(entities: (0..<20_000).map { Memo(uuid: UUID(), text: "m\($0)") })

        let observed = Atomic(0)
        let observer = Task {
            await Ending.of { for try await _ in service.observe(Memo.self, limit: 1) { observed.add(1, ordering: .relaxed) } }
        }
        let changesReader = Task { await Ending.of { for try await _ in service.changes(in: ["memos"]) {} } }
        let gate = ReleaseSignal()
        let firstRow = ReleaseSignal()
        let streamer = Task {
            await Ending.of {
                var rows = service.stream(Memo.self).makeAsyncIterator()
                _ = try await rows.next()
                firstRow.signal()
                await gate.wait()
                while try await rows.next() != nil {}
            }
        }
        try await within(30, "the observers' start") {
            await firstRow.wait()
            while observed.load(ordering: .relaxed) == 0 || service.runtime.listener.channelCount == 0 {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }

        let burst = Task {
            await withTaskGroup(of: Ending.self) { group in
                for index in 0..<200 {
                    group.addTask { await Ending.of { try await service.update(entities: [Memo(uuid: UUID(), text: "b\(index)")]) } }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await Task.sleep(for: .milliseconds(20))
        let stopping = ContinuousClock.now
        runner.cancel()
        try await within(15, "run()") { _ = await runner.result }
        let stopped = ContinuousClock.now - stopping
        gate.signal()

        let observerEnding = try await within(5, "the observation") { await observer.value }
        let changesEnding = try await within(5, "the change feed") { await changesReader.value }
        let streamEnding = try await within(5, "the stream") { await streamer.value }
        let burstEndings = try await within(15, "the coalesced burst") { await burst.value }

        #expect(stopped < .seconds(10), "run() took \(stopped) to return")
        #expect(observerEnding.isNamed, "\(observerEnding)")
        #expect(changesEnding.isNamed, "\(changesEnding)")
        if case .failed(let error) = streamEnding {
            #expect(error.code == .connectionLost, "\(error)")
        } else {
            Issue.record("the stream read on after the service stopped: \(streamEnding)")
        }
        #expect(burstEndings.count == 200 && burstEndings.allSatisfy(\.isNamed), "\(burstEndings.filter { !$0.isNamed })")
        #expect(service.runtime.listener.channelCount == 0)

        // After run(): a new observation fails by name at once.
        let late = await Ending.of { for try await _ in service.observe(Memo.self) {} }
        if case .failed = late {} else { Issue.record("an observation after run() returned: \(late)") }

        if database.settings.poolMode == .session {
            // Every connection was closed by the client when run() returned; a backend ends once it has read the
            // client's goodbye, a moment later on a loaded machine.
            let open = try await PostgresService.withService(configuration: .init(connection: database.settings)) { inspector in
                var open: [String] = []
                for _ in 0..<100 {
                    open = try await inspector.query(
                        """
                        SELECT format('pid %s, %s, since %s, waiting for %s/%s: %s', pid, state, backend_start - now(),
                                      wait_event_type, wait_event, left(query, 120))
                        FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                        """
                    ).map { try $0.decode(String.self) }
                    if open.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return open
            }
            #expect(open.isEmpty, "backends of the stopped service still there 5 s after run() returned: \(open)")
        }
        try await database.drop()
    }

    /// Without `run()` ever ending early: a service that stops with nothing running returns at once.
    @Test func aServiceWithNothingRunningStopsAtOnce() async throws {
        let database = try await TestDatabase.create()
        let service = try PostgresService(configuration: .init(connection: database.settings))
        let runner = Task { try await service.run() }
        await service.runtime.router.waitUntilStarted()
        _ = try await service.query("SELECT 1")
        let stopping = ContinuousClock.now
        runner.cancel()
        try await within(10, "run()") { _ = await runner.result }
        // At once: well under the seconds a wait for a connection or a lost listener would take (5 s on a loaded machine).
        #expect(ContinuousClock.now - stopping < .seconds(5))
        try await database.drop()
    }
}
