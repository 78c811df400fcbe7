import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

@Suite struct SQLScriptTests {
    @Test func splitsOnSemicolonsOutsideQuotesAndComments() {
        let script = """
            -- a comment; not a statement
            CREATE TABLE a (x text DEFAULT 'semi;colon', "we;ird" int);
            /* block; /* nested; */ still comment */
            INSERT INTO a VALUES (E'it\\'s; fine', 1);
            CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
            SELECT $$;$$, $1
            """
        let statements = SQLScript.split(script)
        #expect(statements.map(\.line) == [2, 4, 5, 6])
        #expect(statements[0].sql == #"CREATE TABLE a (x text DEFAULT 'semi;colon', "we;ird" int)"#)
        #expect(statements[1].sql.hasPrefix("/* block;") == false)
        #expect(statements[1].sql == #"INSERT INTO a VALUES (E'it\'s; fine', 1)"#)
        #expect(statements[2].sql.hasSuffix("$body$ LANGUAGE sql"))
        #expect(statements[3].sql == "SELECT $$;$$, $1")
    }

    @Test func emptyStatementsAndTrailingCommentsAreDropped() {
        #expect(SQLScript.split(";;  \n-- only a comment\n").isEmpty)
        #expect(SQLScript.split("SELECT 1;\n-- done").map(\.sql) == ["SELECT 1"])
        #expect(SQLScript.split("SELECT 'a''b;c'").map(\.sql) == ["SELECT 'a''b;c'"])
    }
}

@Suite struct SQLScriptBodyTests {
    @Test func beginAtomicBodiesKeepTheirSemicolons() {
        let script = """
            CREATE FUNCTION f(x int) RETURNS int LANGUAGE sql BEGIN ATOMIC
                SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END;
                SELECT x + 1;
            END;
            SELECT 2;
            """
        let statements = SQLScript.split(script)
        #expect(statements.count == 2)
        #expect(statements[0].sql.hasSuffix("END"))
        #expect(statements[1].sql == "SELECT 2")
    }

    @Test func anIdentifierEndingInEIsNotAnEscapeString() {
        let statements = SQLScript.split(#"SELECT CASE WHEN true THEN 'a' ELSE'C:\'; SELECT 2;"#)
        #expect(statements.map(\.sql) == [#"SELECT CASE WHEN true THEN 'a' ELSE'C:\'"#, "SELECT 2"])
    }

    @Test func parameterPlaceholdersAreCountedOutsideQuotesAndComments() {
        #expect(SQLScript.parameterCount("SELECT 1") == 0)
        #expect(SQLScript.parameterCount("SELECT * FROM t WHERE a = $1 AND b = $12") == 12)
        #expect(SQLScript.parameterCount("SELECT '$3', \"$4\", $$ $5 $$, price$6 FROM t -- $7\n/* $8 */ WHERE a = $2") == 2)
    }
}
