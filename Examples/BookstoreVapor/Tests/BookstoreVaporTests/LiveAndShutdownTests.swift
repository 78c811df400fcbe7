@testable import BookstoreVapor
import BookstoreModels
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StructPostgres
import StructPostgresTesting
import StructPostgresVapor
import Synchronization
import Testing
import VaporTesting

/// The live route over a real socket, and the app's shutdown with a live client connected.
@Suite struct LiveAndShutdownTests {
    @Test func aLiveClientReceivesAnEventAfterAPost() async throws {
        let server = try await RunningApp.start()
        async let stream = HTTP.send("GET", "http://127.0.0.1:\(server.port)/books/\(server.seed.earthsea)/reviews/live?events=2")
        try await waitForListener(server.service)
        let (status, _) = try await HTTP.send(
            "POST", "http://127.0.0.1:\(server.port)/books/\(server.seed.earthsea)/reviews", json: #"{"content": "Read it twice."}"#)
        #expect(status == 201)
        let (streamStatus, events) = try await stream
        #expect(streamStatus == 200)
        let blocks = events.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: reviews") }
        #expect(blocks.count == 2, "\(events)")
        #expect(blocks.first?.contains("data: []") == true)
        #expect(blocks.last?.contains("Read it twice.") == true)
        try await server.stop()
    }

    /// `asyncShutdown()` (what SIGINT and SIGTERM lead to) ends a live stream at once, with no change written: the
    /// client still connected gets its response ended after the event sent; the service stops with no connection in use.
    @Test func shutdownEndsALiveStreamAtOnce() async throws {
        let server = try await RunningApp.start()
        let response = Mutex<(Int, String, String)?>(nil)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/books/\(server.seed.earthsea)/reviews/live")!)
        request.timeoutInterval = 60
        let client = URLSession.shared.dataTask(with: request) { data, answer, error in
            let status = (answer as? HTTPURLResponse)?.statusCode ?? 0
            response.withLock { $0 = (status, String(decoding: data ?? Data(), as: UTF8.self), error.map { "\($0)" } ?? "") }
        }
        client.resume()
        try await waitForListener(server.service)

        let stopping = ContinuousClock.now
        try await server.app.asyncShutdown()
        let took = ContinuousClock.now - stopping
        #expect(took < .seconds(2), "the app stopped after \(took)")
        for _ in 0..<250 where response.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(20)) }
        let (status, events, error) = try #require(response.withLock { $0 })
        #expect(status == 200 && error.isEmpty, "\(error)")
        #expect(events.hasPrefix("event: reviews"), "\(events)")
        #expect(server.service.connectionsInUse == 0)
        try await server.database.drop()
    }
}

/// The app serving on a free port of 127.0.0.1, on a fresh database, seeded: as `serve` runs it, without the
/// signal handlers.
struct RunningApp {
    let app: Application
    let database: TestDatabase
    let port: Int
    /// The app's service, kept: the app's storage is cleared when it shuts down.
    let service: PostgresService
    let seed = Seed()

    static func start() async throws -> RunningApp {
        let database = try await TestDatabase.create()
        let app = try await Application.make(.testing)
        do {
            try await configure(app, database: database.settings)
            try await app.asyncBoot()
            try await app.server.start(address: .hostname("127.0.0.1", port: 0))
            let port = try #require(app.http.server.shared.localAddress?.port)
            let running = RunningApp(app: app, database: database, port: port, service: app.structPostgres.service)
            _ = try await running.seed.write(app.structPostgres.service)
            return running
        } catch {
            try? await app.asyncShutdown()
            try? await database.drop()
            throw error
        }
    }

    func stop() async throws {
        try await app.asyncShutdown()
        try await database.drop()
    }
}

/// Waits until the service listens for changes (a live route's observer has subscribed), then for its first fetch
/// and event (a fetch of a few rows and one write: 500 ms is ample).
func waitForListener(_ service: PostgresService) async throws {
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

/// One HTTP request with Foundation's client.
enum HTTP {
    /// Sends the request; returns the status and the whole body.
    static func send(_ method: String, _ url: String, json: String? = nil) async throws -> (Int, String) {
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
}
