import Testing
import _ConnectionPoolModule
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

@Suite struct ErrorDescriptionTests {
    @Test func theDescriptionNamesWhatAndWhere() {
        var error = StructPostgresError(
            .uniqueViolation, "duplicate key value violates unique constraint", sqlState: "23505", entity: "AuthorEntity",
            table: "authors", column: nil, constraint: "authors_name_key", sql: "INSERT INTO \"authors\" ...")
        error.hint = "use insertIfAbsent"
        #expect(
            error.description
                == #"uniqueViolation: duplicate key value violates unique constraint (sqlstate=23505, entity=AuthorEntity, table=authors, constraint=authors_name_key) hint: use insertIfAbsent sql: INSERT INTO "authors" ..."#
        )
    }

    /// SQL written by hand may hold a password in a literal: errors, logs and spans show it masked.
    @Test func literalsOfHandWrittenSQLAreMasked() {
        let cases: [(String, String)] = [
            ("ALTER ROLE app WITH PASSWORD 'hunter2'", "ALTER ROLE app WITH PASSWORD '****'"),
            ("INSERT INTO t VALUES ('it''s', E'a\\'b', 1)", "INSERT INTO t VALUES ('****', E'****', ?)"),
            ("SELECT $$secret$$, $body$x$$y$body$, $1, $2::text", "SELECT $$****$$, $body$****$body$, $1, $2::text"),
            (#"INSERT INTO "a'b" VALUES ($1, 'x')"#, #"INSERT INTO "a'b" VALUES ($1, '****')"#),
            (#"SELECT "q""'" FROM t WHERE x = 'y'"#, #"SELECT "q""'" FROM t WHERE x = '****'"#),
            ("SELECT 'unterminated", "SELECT '****'"),
            (
                #"INSERT INTO "books" ("uuid") SELECT * FROM unnest($1::uuid[])"#,
                #"INSERT INTO "books" ("uuid") SELECT * FROM unnest($1::uuid[])"#
            ),
        ]
        for (sql, masked) in cases { #expect(maskingLiterals(sql) == masked, "\(sql)") }
    }

    /// Every kind of literal PostgreSQL reads is masked; parameters and identifiers, digits and all, are not.
    @Test(arguments: [
        // Numbers: integers, decimals, exponents, separators, other radixes; a sign stays an operator.
        ("UPDATE t SET n = 471108152342 WHERE n = 471108152343", "UPDATE t SET n = ? WHERE n = ?"),
        ("SELECT 1.5, .5, 5., 1.5e10, 1.5E-10, 2e+3, -7", "SELECT ?, ?, ?, ?, ?, ?, -?"),
        ("SELECT 1_000_000, 0x1F, 0o17, 0b101", "SELECT ?, ?, ?, ?"),
        ("SELECT x FROM t WHERE n IN (1,2,3) LIMIT 50 OFFSET 10", "SELECT x FROM t WHERE n IN (?,?,?) LIMIT ? OFFSET ?"),
        ("SELECT (a[1:2])[3]::numeric(10,2)", "SELECT (a[?:?])[?]::numeric(?,?)"),
        // Identifiers keep their digits: plain, with `$`, quoted, Unicode-escaped, qualified; parameters stay.
        (
            #"SELECT t1.col_2, a$1, "a1", "9lives", U&"d\0061t1" FROM s1.t1 WHERE c3 = $1 AND c4 = $23"#,
            #"SELECT t1.col_2, a$1, "a1", "9lives", U&"d\0061t1" FROM s1.t1 WHERE c3 = $1 AND c4 = $23"#
        ),
        ("SAVEPOINT structpg_sp_1", "SAVEPOINT structpg_sp_1"),
        ("FETCH 256 FROM structpg_cursor_1", "FETCH ? FROM structpg_cursor_1"),
        // Strings of every prefix; a doubled quote and (in E'') a backslash escape stay inside.
        (
            #"SELECT E'it\'s 42', e'\\', B'1010', b'01', X'1F', x'ff', N'42', U&'d\0061t', u&'x''y'"#,
            "SELECT E'****', e'****', B'****', b'****', X'****', x'****', N'****', U&'****', u&'****'"
        ),
        // A word ending in a letter of a prefix is a word: the quote after it starts a plain string.
        (#"SELECT * FROM t WHERE type='a\' OR 1 = 1"#, "SELECT * FROM t WHERE type='****' OR ? = ?"),
        // Dollar quotes, tagged or not, hold anything, quotes and numbers included.
        ("DO $do$ BEGIN PERFORM 1; RAISE NOTICE 'x'; END $do$", "DO $do$****$do$"),
        ("SELECT $_9$ 42 $_9$, $$$$", "SELECT $_9$****$_9$, $$****$$"),
        // Comments are kept, and a quote or a number inside one starts nothing.
        ("SELECT 1 -- don't 7\n, 'x' /* it's /* 8 */ 9 */ FROM t", "SELECT ? -- don't 7\n, '****' /* it's /* 8 */ 9 */ FROM t"),
        // Non-ASCII identifiers and strings.
        ("SELECT prix€2 FROM bücher WHERE titel = 'Über 9000' AND n = 3", "SELECT prix€2 FROM bücher WHERE titel = '****' AND n = ?"),
    ])
    func everyKindOfLiteralIsMasked(sql: String, masked: String) {
        #expect(maskingLiterals(sql) == masked)
    }

    /// The library's own statements, which bind their values, are returned as they are without being lexed.
    @Test func statementsWithoutLiteralsTakeTheFastPath() {
        for sql in [
            #"INSERT INTO "books" ("uuid", "title") SELECT * FROM unnest($1::uuid[], $2::text[]) ON CONFLICT ("uuid") DO UPDATE SET "title" = EXCLUDED."title""#,
            #"SELECT "b"."uuid" FROM "books" "b" WHERE "b"."price" < $1 AND "b"."col_2" = ANY($12)"#,
            "SAVEPOINT structpg_sp_12", "RELEASE SAVEPOINT structpg_sp_3", "COMMIT",
        ] {
            #expect(!SQLLiteralMasker.mayHoldLiteral(sql), "\(sql)")
            #expect(maskingLiterals(sql) == sql)
        }
        for sql in ["SELECT 1", "x = 'y'", "SELECT $$x$$", "LIMIT 50", "SELECT .5", "SELECT $"] {
            #expect(SQLLiteralMasker.mayHoldLiteral(sql), "\(sql)")
        }
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
