import Foundation
import StructPostgres
import Synchronization
import Testing

private struct Abort: Error {}

@Suite struct TransactionTests {
    private func snapshot(_ service: PostgresService) async throws -> ([Novel], [Membership]) {
        (
            try await service.fetch(sortedBy: [.ascending("uuid")]),
            try await service.fetch(sortedBy: [.ascending("storeCode"), .ascending("userName")])
        )
    }

    @Test func aTransactionThatThrowsHalfWayLeavesEveryTableAsBefore() async throws {
        try await withTables(BookSchema.create, Membership.create) { service, _ in
            let books = (0..<5).map { Novel(uuid: UUID(), title: "B\($0)", price: 1, publisher: nil) }
            let members = [Membership(storeCode: "s", userName: "u\(1)", level: 1), Membership(storeCode: "s", userName: "u2", level: 2)]
            try await service.update(entities: books)
            try await service.update(entities: members)
            let before = try await snapshot(service)

            await #expect(throws: Abort.self) {
                try await service.transaction { tx in
                    try await tx.update(
                        entities: books.map {
                            var b = $0; b.title = "changed"; return b
                        })
                    try await tx.delete(entities: [members[0]])
                    try await tx.update(entities: [Membership(storeCode: "new", userName: "x", level: 3)])
                    try await tx.execute(unsafeSQL: "DELETE FROM books WHERE title = 'changed' AND price = 1")
                    #expect(try await tx.count(Novel.self) == 0)
                    throw Abort()
                }
            }
            let after = try await snapshot(service)
            #expect(after.0 == before.0)
            #expect(after.1 == before.1)
        }
    }

    @Test func aTransactionCommitsWhenTheClosureReturns() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "T", price: 1, publisher: nil)
            let seen = try await service.transaction { tx in
                try await tx.update(entities: [book])
                return try await tx.count(Novel.self)
            }
            #expect(seen == 1)
            #expect(try await service.fetch(Novel.self) == [book])
        }
    }

    @Test func isolationLevelAndReadOnlyAreApplied() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let level = try await service.transaction(isolation: .serializable, readOnly: true) { tx in
                let rows = try await tx.query("SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')")
                return try rows[0].decode((String, String).self)
            }
            #expect(level == ("serializable", "on"))
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction(isolation: nil, readOnly: true) { tx in
                    try await tx.update(entities: [Novel(uuid: UUID(), title: nil, price: nil, publisher: nil)])
                }
            }
            #expect(error?.sqlState == "25006")
            #expect(try await rowCount("books", service) == 0)
        }
    }

    @Test func aNestedTransactionIsASavepoint() async throws {
        try await withTables(BookSchema.create) { service, log in
            let kept = Novel(uuid: UUID(), title: "kept", price: 1, publisher: nil)
            let undone = Novel(uuid: UUID(), title: "undone", price: 1, publisher: nil)
            let committed = Novel(uuid: UUID(), title: "inner", price: 1, publisher: nil)
            try await service.transaction { tx in
                try await tx.update(entities: [kept])
                await #expect(throws: Abort.self) {
                    try await tx.transaction { inner in
                        try await inner.update(entities: [undone])
                        throw Abort()
                    }
                }
                try await tx.transaction { inner in try await inner.update(entities: [committed]) }
            }
            let titles = try await service.fetch(Novel.self, sortedBy: [.ascending("title")]).map(\.title)
            #expect(titles == ["inner", "kept"])
            #expect(log.all.contains("SAVEPOINT structpg_sp_1"))
            #expect(log.all.contains("ROLLBACK TO SAVEPOINT structpg_sp_1"))
            #expect(log.all.contains("RELEASE SAVEPOINT structpg_sp_1"))
        }
    }

    /// PostgreSQL ignores every statement after a failed one until the transaction ends: the next call says why
    /// and how to go on, and a savepoint around the statement that may fail lets the transaction go on.
    @Test func aFailedStatementCaughtInsideATransactionIsNamedByTheNextCall() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "kept", price: 1, publisher: nil)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    try await tx.update(entities: [book])
                    let caught: StructPostgresError?
                    do { try await tx.execute(unsafeSQL: "SELECT 1 / 0"); caught = nil } catch { caught = error as? StructPostgresError }
                    #expect(caught?.sqlState == "22012")
                    _ = try await tx.count(Novel.self)
                }
            }
            #expect(error?.sqlState == "25P02")
            #expect(error?.message.contains("an earlier statement of this transaction failed") == true)
            #expect(error?.message.contains("tx.transaction { }") == true)
            #expect(try await rowCount("books", service) == 0)

            let count = try await service.transaction { tx in
                try await tx.update(entities: [book])
                await #expect(throws: StructPostgresError.self) {
                    try await tx.transaction { inner in try await inner.execute(unsafeSQL: "SELECT 1 / 0") }
                }
                return try await tx.count(Novel.self)
            }
            #expect(count == 1)
            #expect(try await service.fetch(Novel.self) == [book])
        }
    }

    /// A connection lost while COMMIT runs leaves the outcome unknown to the client: the error says so. (Here the
    /// server ended the backend before committing, so nothing was.)
    @Test func aConnectionLostDuringCommitSaysTheOutcomeIsUnknown() async throws {
        let slowCommit = """
            CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(10); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON books DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION slow_commit();
            """
        try await withTables(BookSchema.create, slowCommit) { service, _ in
            let terminator = Task {
                for _ in 0..<400 {
                    try await Task.sleep(for: .milliseconds(25))
                    let rows = try await service.query(
                        """
                        SELECT pid FROM pg_stat_activity
                        WHERE datname = current_database() AND query = 'COMMIT' AND state = 'active' AND pid <> pg_backend_pid()
                        """)
                    if let pid = try rows.first?.decode(Int32.self) {
                        _ = try await service.query("SELECT pg_terminate_backend(\(pid))")
                        return true
                    }
                }
                return false
            }
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    try await tx.update(entities: [Novel(uuid: UUID(), title: "in doubt", price: 1, publisher: nil)])
                }
            }
            #expect(try await terminator.value, "the COMMIT was seen running")
            #expect(error?.code == .connectionLost)
            #expect(error?.sql == "COMMIT")
            #expect(error?.message.contains("whether the transaction was committed is unknown") == true, "\(error.map { "\($0)" } ?? "")")
            let written = try await rowCount("books", service)
            #expect(written == 0)
        }
    }

    @Test func aSerializationFailureReRunsTheWholeClosure() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "counter", price: 0, publisher: nil)
            try await service.update(entities: [book])
            let attempts = Mutex(0)
            try await service.transaction(.init(isolation: .repeatableRead, maxRetries: 2)) { tx in
                let attempt = attempts.withLock {
                    $0 += 1; return $0
                }
                var current = try await tx.fetch(Novel.self, where: .equal("uuid", book.uuid))[0]
                if attempt == 1 {
                    // Another session changes the row after this transaction took its snapshot.
                    var concurrent = current
                    concurrent.price = 100
                    try await service.update(entities: [concurrent])
                }
                current.price = (current.price ?? 0) + 1
                try await tx.update(entities: [current])
            }
            #expect(attempts.withLock { $0 } == 2)
            #expect(try await service.fetch(Novel.self).first?.price == 101)
        }
    }

    @Test func retriesAreBounded() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "contended", price: 0, publisher: nil)
            try await service.update(entities: [book])
            let attempts = Mutex(0)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction(.init(isolation: .repeatableRead, maxRetries: 2)) { tx in
                    attempts.withLock { $0 += 1 }
                    var current = try await tx.fetch(Novel.self, where: .equal("uuid", book.uuid))[0]
                    var concurrent = current
                    concurrent.title = UUID().uuidString
                    try await service.update(entities: [concurrent])  // conflicts every time
                    current.price = 1
                    try await tx.update(entities: [current])
                }
            }
            #expect(error?.code == .serializationFailure)
            #expect(error?.sqlState == "40001")
            #expect(attempts.withLock { $0 } == 3)
        }
    }

    @Test func aCallerCancelledWhileWaitingForAConnectionFailsAsCancelled() async throws {
        try await withTables(BookSchema.create, pool: PoolOptions(maxConnections: 1, acquireTimeout: .seconds(20))) { service, _ in
            _ = try await service.count(Novel.self)
            let (holding, signal) = AsyncStream<Void>.makeStream()
            let (release, released) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await service.withConnection { _ in
                    signal.yield()
                    for await _ in release { break }
                }
            }
            for await _ in holding { break }
            let waiter = Task { try await service.count(Novel.self) }
            try await Task.sleep(for: .milliseconds(100))
            waiter.cancel()
            let error = await #expect(throws: StructPostgresError.self) { try await waiter.value }
            #expect(error?.code == .queryCancelled, "\(String(describing: error))")
            released.yield()
            try await holder.value
            #expect(try await service.count(Novel.self) == 0)
        }
    }

    @Test func aCancelledCallerKeepsItsConnectionUntilItsClosureReturns() async throws {
        try await withTables(BookSchema.create, pool: PoolOptions(maxConnections: 1, acquireTimeout: .seconds(20))) { service, _ in
            let book = Novel(uuid: UUID(), title: "uncommitted", price: 1, publisher: nil)
            _ = try await service.count(Novel.self)
            let (written, signal) = AsyncStream<Void>.makeStream()
            let writer = Task {
                try await service.transaction { tx in
                    try await tx.update(entities: [book])
                    signal.yield()
                    _ = try await tx.query("SELECT pg_sleep(0.6)")
                    throw Abort()
                }
            }
            for await _ in written { break }
            writer.cancel()
            // With one connection, this waits for the writer: it must not run inside the writer's transaction.
            let seen = try await service.count(Novel.self)
            #expect(seen == 0)
            // The writer fails either way: cancelled while reading pg_sleep's result, or by its own error.
            let outcome = await writer.result
            #expect(throws: (any Error).self) { try outcome.get() }
        }
    }

    /// Closures passed to the service may capture an actor's state: the library's async functions run on
    /// the caller's executor (NonisolatedNonsendingByDefault), so nothing non-Sendable crosses an isolation boundary.
    @MainActor @Test func usableFromTheMainActorCapturingItsState() async throws {
        var titles: [String] = []
        try await withTables(BookSchema.create) { service, _ in
            try await service.transaction { tx in
                try await tx.update(entities: [Novel(uuid: UUID(), title: "main", price: 1, publisher: nil)])
                titles = try await tx.fetch(Novel.self).compactMap(\.title)
            }
            try await service.withConnection { _ in titles.append("leased") }
        }
        #expect(titles == ["main", "leased"])
    }

    @Test func aTransactionCannotBeUsedOutsideItsClosure() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let escaped = try await service.transaction { tx in tx }
            let error = await #expect(throws: StructPostgresError.self) {
                _ = try await escaped.count(Novel.self)
            }
            #expect(error?.code == .transactionMisuse)

            let outerError = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { outer in
                    try await outer.transaction { _ in
                        _ = try await outer.count(Novel.self)
                    }
                }
            }
            #expect(outerError?.code == .transactionMisuse)
        }
    }
}
