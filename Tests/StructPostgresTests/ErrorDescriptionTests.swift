import Testing
import _ConnectionPoolModule
@testable import StructPostgres

@Suite struct ErrorDescriptionTests {
    @Test func theDescriptionNamesWhatAndWhere() {
        var error = StructPostgresError(
            .uniqueViolation, "duplicate key value violates unique constraint", sqlState: "23505", entity: "AuthorEntity",
            table: "authors", column: nil, constraint: "authors_name_key", sql: "INSERT INTO \"authors\" ...")
        error.hint = "use insertIfAbsent"
        #expect(error.description == #"uniqueViolation: duplicate key value violates unique constraint (sqlstate=23505, entity=AuthorEntity, table=authors, constraint=authors_name_key) hint: use insertIfAbsent sql: INSERT INTO "authors" ..."#)
    }

    /// SQL written by hand may hold a password in a literal: errors, logs and spans show it masked.
    @Test func literalsOfHandWrittenSQLAreMasked() {
        let cases: [(String, String)] = [
            ("ALTER ROLE app WITH PASSWORD 'hunter2'", "ALTER ROLE app WITH PASSWORD '****'"),
            ("INSERT INTO t VALUES ('it''s', E'a\\'b', 1)", "INSERT INTO t VALUES ('****', E'****', 1)"),
            ("SELECT $$secret$$, $body$x$$y$body$, $1, $2::text", "SELECT $$****$$, $body$****$body$, $1, $2::text"),
            (#"INSERT INTO "a'b" VALUES ($1, 'x')"#, #"INSERT INTO "a'b" VALUES ($1, '****')"#),
            (#"SELECT "q""'" FROM t WHERE x = 'y'"#, #"SELECT "q""'" FROM t WHERE x = '****'"#),
            ("SELECT 'unterminated", "SELECT '****'"),
            (#"INSERT INTO "books" ("uuid") SELECT * FROM unnest($1::uuid[])"#, #"INSERT INTO "books" ("uuid") SELECT * FROM unnest($1::uuid[])"#),
        ]
        for (sql, masked) in cases { #expect(maskingLiterals(sql) == masked, "\(sql)") }
    }

    @Test func sqlStatesMapToCodes() {
        #expect(SQLState.code(for: "23505") == .uniqueViolation)
        #expect(SQLState.code(for: "23503") == .foreignKeyViolation)
        #expect(SQLState.code(for: "23502") == .notNullViolation)
        #expect(SQLState.code(for: "23514") == .checkViolation)
        #expect(SQLState.code(for: "40001") == .serializationFailure)
        #expect(SQLState.code(for: "40P01") == .deadlock)
        #expect(SQLState.code(for: "57014") == .queryCancelled)
        #expect(SQLState.code(for: "42P01") == .undefinedTable)
        #expect(SQLState.code(for: "42703") == .undefinedColumn)
        #expect(SQLState.code(for: "22003") == .invalidValue)
        #expect(SQLState.code(for: "08006") == .connectionLost)
        #expect(SQLState.code(for: "42601") == .server)
        #expect(StructPostgresError(.deadlock, "x").isRetryable)
        #expect(!StructPostgresError(.uniqueViolation, "x").isRetryable)
    }

    @Test func thePoolGivingUpOnConnectingIsALostConnection() {
        let mapped = StructPostgresError.from(ConnectionPoolError.connectionCreationCircuitBreakerTripped, sql: nil)
        #expect(mapped.code == .connectionLost)
        #expect(mapped.message.hasPrefix("cannot connect: the pool's attempts to connect keep failing"))
        #expect(StructPostgresError.from(ConnectionPoolError.poolShutdown, sql: nil).code == .connectionLost)
    }
}
