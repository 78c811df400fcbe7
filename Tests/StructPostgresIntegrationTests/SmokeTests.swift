import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

@Suite struct SmokeTests {
    @Test func writesAndReadsBooks() async throws {
        try await TestPostgres.withDatabase { service in
            try await service.execute(unsafeSQL: BookSchema.create)
            let books = (0..<3).map { Novel(uuid: UUID(), title: "Book \($0)", price: Double($0), publisher: nil) }
            let result = try await service.update(entities: books)
            #expect(result.inserted == 3)
            let read: [Novel] = try await service.fetch(sortedBy: [.ascending("price")])
            #expect(read == books)
        }
    }
}

import Logging
import ServiceLifecycle

@Suite struct ServiceLifecycleTests {
    /// A service of a `ServiceGroup`: the pool runs until graceful shutdown.
    struct Client: Service {
        let database: PostgresService
        let result: @Sendable (Int) -> Void
        func run() async throws {
            let rows = try await database.query("SELECT 40 + 2")
            result(Int(try rows[0].decode(Int32.self)))
        }
    }

    @Test func runsInAServiceGroup() async throws {
        let database = try await TestDatabase.create()
        let service = try PostgresService(configuration: .init(connection: database.settings))
        let answer = Mutex(0)
        var logger = Logger(label: "group")
        logger.logLevel = .critical
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: service),
                    .init(
                        service: Client(database: service) { value in answer.withLock { $0 = value } },
                        successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                logger: logger))
        try await group.run()
        #expect(answer.withLock { $0 } == 42)
        try await database.drop()
    }
}

import Synchronization
