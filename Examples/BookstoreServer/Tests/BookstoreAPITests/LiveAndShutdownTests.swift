@testable import BookstoreAPI
import BookstoreModels
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import StructPostgres
import StructPostgresTesting
import Synchronization
import Testing

/// The live route over a real socket, and a graceful shutdown with a request in flight.
@Suite struct LiveAndShutdownTests {
    @Test func aLiveClientReceivesAnEventAfterAPost() async throws {
        try await withRunningServer { port, service, seed in
            async let stream = get("http://127.0.0.1:\(port)/books/\(seed.earthsea)/reviews/live?events=2")
            try await waitForListener(service)
            let (status, _) = try await send(
                "POST", "http://127.0.0.1:\(port)/books/\(seed.earthsea)/reviews", json: #"{"content": "Read it twice."}"#)
            #expect(status == 201)
            let (streamStatus, events) = try await stream
            #expect(streamStatus == 200)
            let blocks = events.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: reviews") }
            #expect(blocks.count == 2, "\(events)")
            #expect(blocks.first?.contains("data: []") == true)
            #expect(blocks.last?.contains("Read it twice.") == true)
        }
    }

    /// A graceful shutdown (what SIGINT and SIGTERM trigger) ends a live stream at once, with no change written: with
    /// the client still connected (its response ends after the events sent), and with the client gone.
    @Test(arguments: [true, false])
    func shutdownEndsALiveStreamAtOnceWithoutAChange(clientStaysConnected: Bool) async throws {
        let database = try await TestDatabase.create()
        let server = try await RunningServer.start(database)
        let seed = Seed()
        _ = try await seed.write(server.service)

        let response = Mutex<(Int, String, String)?>(nil)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/books/\(seed.earthsea)/reviews/live")!)
        request.timeoutInterval = 60
        let client = URLSession.shared.dataTask(with: request) { data, answer, error in
            let status = (answer as? HTTPURLResponse)?.statusCode ?? 0
            response.withLock { $0 = (status, String(decoding: data ?? Data(), as: UTF8.self), error.map { "\($0)" } ?? "") }
        }
        client.resume()
        try await waitForListener(server.service)
        if !clientStaysConnected {
            client.cancel()
            try await Task.sleep(for: .milliseconds(300))
        }

        let stopping = ContinuousClock.now
        await server.group.triggerGracefulShutdown()
        let stopped = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await server.running.value; return true
            }
            group.addTask {
                try await Task.sleep(for: .seconds(10)); return false
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        let took = ContinuousClock.now - stopping
        if !stopped { server.running.cancel() }
        #expect(stopped && took < .seconds(2), "the server stopped: \(stopped), after \(took)")
        if clientStaysConnected {
            for _ in 0..<250 where response.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(20)) }
            let (status, events, error) = try #require(response.withLock { $0 })
            #expect(status == 200 && error.isEmpty, "\(error)")
            #expect(events.hasPrefix("event: reviews"), "\(events)")
        }
        #expect(server.service.connectionsInUse == 0)
        try await database.drop()
    }
}

/// The application on a free port of 127.0.0.1, in a `ServiceGroup` of the test's, on `database`.
private struct RunningServer {
    let service: PostgresService
    let group: ServiceGroup
    let running: Task<Void, any Error>
    let port: Int

    static func start(_ database: TestDatabase) async throws -> RunningServer {
        let service = try PostgresService(configuration: .init(connection: database.settings, pool: PoolOptions(maxConnections: 4)))
        let bound = Mutex<Int?>(nil)
        let app = buildApplication(service: service, settings: ServerSettings(port: 0)) { port in bound.withLock { $0 = port } }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        while bound.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(20)) }
        return RunningServer(service: service, group: group, running: running, port: bound.withLock { $0 }!)
    }
}

/// A server on a free port with a fresh database, seeded; stopped (gracefully) after `body`.
private func withRunningServer(_ body: (Int, PostgresService, Seed) async throws -> Void) async throws {
    let database = try await TestDatabase.create()
    let server = try await RunningServer.start(database)
    do {
        let seed = Seed()
        _ = try await seed.write(server.service)
        try await body(server.port, server.service, seed)
    } catch {
        await server.group.triggerGracefulShutdown()
        _ = try? await server.running.value
        try? await database.drop()
        throw error
    }
    await server.group.triggerGracefulShutdown()
    try await server.running.value
    try await database.drop()
}

/// Waits until the service listens for changes (its observer has subscribed), then for its first fetch and event
/// (a fetch of a few rows and one write: 500 ms is ample).
private func waitForListener(_ service: PostgresService) async throws {
    for _ in 0..<500 {
        let listening = try await service.query(
            """
            SELECT count(*)::int8 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'
            """)[0].decode(Int64.self)
        if listening > 0 {
            try await Task.sleep(for: .milliseconds(500))
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("the live route did not start listening within 10 s")
}

private func get(_ url: String) async throws -> (Int, String) { try await send("GET", url, json: nil) }

/// One HTTP request with Foundation's client; returns the status and the whole body.
private func send(_ method: String, _ url: String, json: String?) async throws -> (Int, String) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.timeoutInterval = 60
    if let json {
        request.httpBody = Data(json.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    return try await withCheckedThrowingContinuation { continuation in
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let error { return continuation.resume(throwing: error) }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            continuation.resume(returning: (status, String(decoding: data ?? Data(), as: UTF8.self)))
        }.resume()
    }
}
