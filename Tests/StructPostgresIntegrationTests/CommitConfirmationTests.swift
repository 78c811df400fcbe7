import Foundation
import PostgresNIO
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import StructPostgresTesting
import Testing

/// An author and the books that reference it through a foreign key checked only at commit.
private struct Writer: StoredModel, Equatable {
    static let table = "writers"
    var uuid: UUID
    var name: String
}

private struct Manuscript: StoredModel, Equatable {
    static let table = "manuscripts"
    var uuid: UUID
    var title: String
    var writerID: UUID?
}

private let deferredSchema = """
    CREATE TABLE writers (uuid uuid PRIMARY KEY, name text NOT NULL);
    CREATE TABLE manuscripts (
        uuid uuid PRIMARY KEY, title text NOT NULL,
        writer_id uuid REFERENCES writers (uuid) DEFERRABLE INITIALLY DEFERRED
    );
    """

/// A statement outside a transaction is committed by PostgreSQL after it completed (at the protocol's Sync):
/// deferred constraints are checked then. Every write verb reports that commit's error, and stores nothing.
@Suite struct CommitConfirmationTests {
    private func withDeferredTables(
        configure: @escaping (inout PostgresService.Configuration) -> Void = { _ in },
        _ body: (PostgresService) async throws -> Void
    ) async throws {
        try await withTables(deferredSchema, configure: configure) { service, _ in try await body(service) }
    }

    private func expectViolationAtCommit(_ error: StructPostgresError?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.code == .foreignKeyViolation, "\(error.map { "\($0)" } ?? "no error")", sourceLocation: sourceLocation)
        #expect(error?.constraint == "manuscripts_writer_id_fkey", sourceLocation: sourceLocation)
        let said = error?.message ?? ""
        #expect(
            said.contains("nothing was stored") || said.contains("nothing was written"), "\(error.map { "\($0)" } ?? "no error")",
            sourceLocation: sourceLocation)
    }

    private func orphan() -> Manuscript { Manuscript(uuid: UUID(), title: "orphan", writerID: UUID()) }

    @Test func aSingleUpsertThatBreaksADeferredConstraintThrowsAndStoresNothing() async throws {
        try await withDeferredTables { (service: PostgresService) async throws in
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [orphan()]) }
            expectViolationAtCommit(error)
            #expect(try await rowCount("manuscripts", service) == 0)
            // The service goes on: the next write on a fresh connection succeeds.
            let writer = Writer(uuid: UUID(), name: "W")
            try await service.update(entities: [writer])
            try await service.update(entities: [Manuscript(uuid: UUID(), title: "kept", writerID: writer.uuid)])
            #expect(try await rowCount("manuscripts", service) == 1)
        }
    }

    @Test func aBatchThatBreaksADeferredConstraintThrowsAndStoresNothing() async throws {
        try await withDeferredTables { (service: PostgresService) async throws in
            let writer = Writer(uuid: UUID(), name: "W")
            try await service.update(entities: [writer])
            let batch = (0..<50).map { Manuscript(uuid: UUID(), title: "m\($0)", writerID: writer.uuid) } + [orphan()]
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
            expectViolationAtCommit(error)
            #expect(try await rowCount("manuscripts", service) == 0)
        }
    }

    @Test func deletesThatBreakADeferredConstraintThrowAndDeleteNothing() async throws {
        try await withDeferredTables { (service: PostgresService) async throws in
            let writer = Writer(uuid: UUID(), name: "W")
            try await service.update(entities: [writer])
            try await service.update(entities: [Manuscript(uuid: UUID(), title: "m", writerID: writer.uuid)])
            let one = await #expect(throws: StructPostgresError.self) { try await service.delete(entities: [writer]) }
            #expect(one?.code == .foreignKeyViolation, "\(one.map { "\($0)" } ?? "")")
            let all = await #expect(throws: StructPostgresError.self) {
                try await service.deleteAll(Writer.self, where: .format("name == %@", "W"))
            }
            #expect(all?.code == .foreignKeyViolation, "\(all.map { "\($0)" } ?? "")")
            #expect(try await rowCount("writers", service) == 1)
        }
    }

    @Test func executedSQLThatBreaksADeferredConstraintThrowsAndStoresNothing() async throws {
        try await withDeferredTables { (service: PostgresService) async throws in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.execute(unsafeSQL: "INSERT INTO manuscripts VALUES (gen_random_uuid(), 'x', gen_random_uuid())")
            }
            expectViolationAtCommit(error)
            #expect(error?.sql?.contains("INSERT INTO manuscripts") == true)
            let query = await #expect(throws: StructPostgresError.self) {
                try await service.query("INSERT INTO manuscripts VALUES (gen_random_uuid(), 'x', gen_random_uuid()) RETURNING uuid")
            }
            expectViolationAtCommit(query)
            #expect(try await rowCount("manuscripts", service) == 0)
        }
    }

    @Test func coalescedUpsertsThatBreakADeferredConstraintThrowAndStoreNothing() async throws {
        try await withDeferredTables(configure: { $0.coalescing = WriteCoalescing() }) { service in
            let writer = Writer(uuid: UUID(), name: "W")
            try await service.update(entities: [writer])
            let good = (0..<8).map { Manuscript(uuid: UUID(), title: "m\($0)", writerID: writer.uuid) }
            let results = await withTaskGroup(of: StructPostgresError?.self) { group in
                for model in good + [orphan()] {
                    group.addTask {
                        do { _ = try await service.update(entities: [model]); return nil } catch let error as StructPostgresError {
                            return error
                        } catch { return nil }
                    }
                }
                var errors: [StructPostgresError] = []
                for await error in group { if let error { errors.append(error) } }
                return errors
            }
            // The batch fails at commit and is written again in halves: only the orphan's call fails.
            #expect(results.count == 1 && results.first?.code == .foreignKeyViolation, "\(results)")
            let stored = try await service.fetch(Manuscript.self)
            #expect(Set(stored.map(\.uuid)) == Set(good.map(\.uuid)))
        }
    }

    @Test func aMigrationOutsideATransactionThatBreaksADeferredConstraintFailsAndIsNotRecorded() async throws {
        try await withDeferredTables { (service: PostgresService) async throws in
            let migrations = try MigrationSet([
                Migration(
                    fileName: "0001_orphan.sql",
                    text: """
                        -- migrate:up transaction:false
                        INSERT INTO manuscripts VALUES (gen_random_uuid(), 'orphan', gen_random_uuid());
                        """)
            ])
            let error = await #expect(throws: StructPostgresError.self) {
                try await Migrator(service: service, migrations: migrations).migrate()
            }
            #expect(error?.code == .migrationFailed, "\(error.map { "\($0)" } ?? "")")
            #expect(error?.sqlState == "23503")
            #expect(try await rowCount("manuscripts", service) == 0)
            let applied = try await service.query("SELECT count(*) FROM structpg_migrations WHERE state = 'applied'")
            #expect(try applied[0].decode(Int64.self) == 0)
        }
    }

    @Test func theSameWritesInsideATransactionFailAtCommit() async throws {
        try await withDeferredTables { (service: PostgresService) async throws in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in _ = try await tx.update(entities: [orphan()]) }
            }
            #expect(error?.code == .foreignKeyViolation)
            #expect(error?.sql == "COMMIT")
            #expect(try await rowCount("manuscripts", service) == 0)
        }
    }

    /// The watcher is in place on the service's connections, so no statement pays a second round trip.
    @Test func everyConnectionIsWatchedWithoutASecondStatement() async throws {
        try await withTables(deferredSchema) { service, log in
            try await service.update(entities: [Writer(uuid: UUID(), name: "W")])
            _ = try await service.count(Writer.self)
            #expect(log.all.filter { !$0.contains("pg_") && !$0.contains("to_regclass") }.count == 2, "\(log.all)")
            try await service.withConnection { connection in
                #expect(connection.channelForWatching != nil, "PostgresNIO's channel is read by reflection")
            }
        }
    }

    /// Without the watcher, each statement is confirmed by an empty one sent after it: the same errors.
    @Test(.serialized, arguments: [false, true])
    func theFallbackConfirmsTheCommitToo(watched: Bool) async throws {
        try await ReadyForQueryWatcher.$forceFallback.withValue(!watched) {
            try await withDeferredTables { (service: PostgresService) async throws in
                let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [orphan()]) }
                #expect(error?.code == (watched ? .foreignKeyViolation : .connectionLost), "\(error.map { "\($0)" } ?? "")")
                #expect(try await rowCount("manuscripts", service) == 0)
                let writer = Writer(uuid: UUID(), name: "W")
                try await service.update(entities: [writer])
                #expect(try await service.fetch(Writer.self) == [writer])
            }
        }
    }
}

/// Pins PostgresNIO's behaviour that ``ReadyForQueryWatcher`` works around: a statement outside a transaction is
/// reported done at `CommandComplete`, and the error of its commit is dropped. When this test fails, PostgresNIO
/// reports that error itself and the watcher can be deleted.
@Suite struct ReadyForQueryCanaryTests {
    @Test func postgresNIOReportsSuccessBeforeTheCommitThatFails() async throws {
        let database = try await TestDatabase.create()
        defer { Task { try await database.drop() } }
        let configuration = PostgresService.Configuration(connection: database.settings)
        try await PostgresService.withService(configuration: configuration) { service in
            try await service.execute(unsafeSQL: deferredSchema)
        }
        try await PostgresService.withService(configuration: configuration) { service in
            let reported: Bool = try await service.withConnection { connection in
                do {
                    _ = try await connection.query(
                        "INSERT INTO manuscripts VALUES (gen_random_uuid(), 'x', gen_random_uuid())", logger: .init(label: "canary")
                    ).get()
                    return true
                } catch {
                    return false
                }
            }
            #expect(reported, "PostgresNIO now reports the commit's error: ReadyForQueryWatcher can go")
        }
        try await PostgresService.withService(configuration: configuration) { (service: PostgresService) async throws in
            #expect(try await rowCount("manuscripts", service) == 0, "the statement PostgresNIO reported done was not committed")
        }
    }
}
