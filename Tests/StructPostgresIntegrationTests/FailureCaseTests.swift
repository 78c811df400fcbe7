import Foundation
import StructPostgres
import Synchronization
import Testing

/// Failures that come from the server or the connection rather than from the values written.
@Suite struct FailureCaseTests {
    @Test func aRollbackOfNoStepsIsRefusedByName() async throws {
        try await withTables { service, _ in
            let migrator = Migrator(service: service, migrations: try MigrationSet(directory: repositoryMigrations))
            for steps in [0, -3] {
                let error = await #expect(throws: StructPostgresError.self) { try await migrator.rollback(steps: steps) }
                #expect(error?.code == .invalidConfiguration)
                #expect(error?.message == "rollback(steps:) takes a positive number of migrations, not \(steps)")
            }
        }
    }

    @Test func aStatementCancelledByTimeoutIsQueryCancelled() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    try await tx.execute(unsafeSQL: "SET LOCAL statement_timeout = 50")
                    _ = try await tx.query("SELECT pg_sleep(5)")
                }
            }
            #expect(error?.code == .queryCancelled)
            #expect(error?.sqlState == "57014")
            #expect(error?.sql == "SELECT pg_sleep(?)")
        }
    }

    @Test func aConnectionKilledMidTransactionIsConnectionLostAndThePoolRecovers() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "lost", price: 1, publisher: nil)
            let runs = Mutex(0)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    runs.withLock { $0 += 1 }
                    try await tx.update(entities: [book])
                    let pid = try await tx.query("SELECT pg_backend_pid()")[0].decode(Int32.self)
                    _ = try await service.query("SELECT pg_terminate_backend(\(pid))")
                    _ = try await tx.query("SELECT 1")
                }
            }
            #expect(error?.code == .connectionLost)
            // The statement after the kill never ran, but the closure's earlier ones did: it is not run again.
            #expect(runs.withLock { $0 } == 1)
            let count = try await service.count(Novel.self)
            #expect(count == 0)
        }
    }

    @Test func undefinedColumnsInRawSQLKeepTheirSQLState() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                _ = try await service.query("SELECT no_such_column FROM books")
            }
            #expect(error?.code == .undefinedColumn)
            #expect(error?.sqlState == "42703")
        }
    }

    @Test func aFailingScriptNamesTheStatementLine() async throws {
        try await withTables { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.execute(unsafeSQL: "CREATE TABLE a (x int);\n\nCREATE TABLE b (y nosuchtype);")
            }
            #expect(error?.message.contains("statement at line 3") == true)
        }
    }
}
