import _ConnectionPoolModule
import Synchronization
import Testing

/// Pins the behaviour of PostgresNIO's pool (1.33.2) that ``ConnectionPool``'s `nudge()` works around, with mock
/// connections and no server: a lease queued while the pool is at its maximum is not served when a connection
/// closes (`PoolStateMachine.connectionClosed` opens a connection only to keep the minimum). When this test
/// fails, PostgresNIO serves such a lease itself and the nudge can be deleted.
struct UpstreamPoolCanaryTests {
    final class MockConnection: PooledConnection {
        let id: Int
        private let handlers = Mutex<[@Sendable ((any Error)?) -> Void]>([])
        init(id: Int) { self.id = id }
        func onClose(_ closure: @escaping @Sendable ((any Error)?) -> Void) { handlers.withLock { $0.append(closure) } }
        func close() {
            for handler in handlers.withLock({ handlers in
                defer { handlers = [] }; return handlers
            }) { handler(nil) }
        }
    }

    struct Request: ConnectionRequestProtocol {
        let id: Int
        let answers: Answers
        func complete(with result: Result<ConnectionLease<MockConnection>, ConnectionPoolError>) {
            answers.record(id, result)
        }
    }

    final class Answers: Sendable {
        let results = Mutex<[Int: String]>([:])
        let leased = Mutex<[Int: MockConnection]>([:])
        func record(_ id: Int, _ result: Result<ConnectionLease<MockConnection>, ConnectionPoolError>) {
            switch result {
            case .success(let lease):
                leased.withLock { $0[id] = lease.connection }
                results.withLock { $0[id] = "connection \(lease.connection.id)" }
            case .failure(let error):
                results.withLock { $0[id] = "\(error)" }
            }
        }
        func connection(of id: Int) -> MockConnection? { leased.withLock { $0[id] } }
        func answer(of id: Int) -> String? { results.withLock { $0[id] } }
    }

    typealias Pool = ConnectionPool<
        MockConnection, Int, ConnectionIDGenerator, Request, Int, NoOpKeepAliveBehavior<MockConnection>,
        NoOpConnectionPoolMetrics<Int>, ContinuousClock
    >

    @Test func aLeaseQueuedAtTheMaximumIsNotServedWhenALeasedConnectionCloses() async throws {
        var configuration = ConnectionPoolConfiguration()
        configuration.minimumConnectionCount = 0
        configuration.maximumConnectionSoftLimit = 1
        configuration.maximumConnectionHardLimit = 1
        let pool = Pool(
            configuration: configuration, idGenerator: ConnectionIDGenerator(), requestType: Request.self,
            keepAliveBehavior: NoOpKeepAliveBehavior(connectionType: MockConnection.self),
            observabilityDelegate: NoOpConnectionPoolMetrics(connectionIDType: Int.self), clock: ContinuousClock()
        ) { id, _ in ConnectionAndMetadata(connection: MockConnection(id: id), maximalStreamsOnConnection: 1) }
        let answers = Answers()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            defer { group.cancelAll() }
            do {
                pool.leaseConnection(Request(id: 1, answers: answers))
                for _ in 0..<100 where answers.connection(of: 1) == nil { try await Task.sleep(for: .milliseconds(5)) }
                let first = try #require(answers.connection(of: 1))
                pool.leaseConnection(Request(id: 2, answers: answers))
                first.close()
                for _ in 0..<60 where answers.answer(of: 2) == nil { try await Task.sleep(for: .milliseconds(5)) }
                #expect(
                    answers.answer(of: 2) == nil,
                    "PostgresNIO's pool now serves a queued lease when a connection closes: ConnectionPool.nudge() can go")
                pool.cancelLeaseConnection(2)
            } catch {
                Issue.record(error)
            }
        }
    }
}
