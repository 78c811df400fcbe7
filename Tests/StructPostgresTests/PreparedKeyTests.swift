import PostgresNIO
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// A prepared statement's key is hashed once and names exactly the text and types it was made from.
@Suite struct PreparedKeyTests {
    @Test func keysOfTheSameTextAndTypesAreEqualAndHashAlike() {
        let sql = "INSERT INTO books AS t (uuid) VALUES ($1) ON CONFLICT (uuid) DO NOTHING RETURNING (t.xmax = 0)"
        let key = PreparedStatementRegistry.Key(sql: sql, types: [.uuid])
        let same = PreparedStatementRegistry.Key(sql: String(sql.reversed().reversed()), types: [.uuid])
        #expect(key == same && key.hashValue == same.hashValue)
        #expect(key != PreparedStatementRegistry.Key(sql: sql, types: [.text]))
        #expect(key != PreparedStatementRegistry.Key(sql: sql + " ", types: [.uuid]))
        #expect(Set([key, same]).count == 1)
    }

    @Test func changingAStatementsTextOrTypesDropsItsKey() {
        let key = PreparedStatementRegistry.Key(sql: "SELECT $1", types: [.int8])
        var statement = Statement(sql: "SELECT $1", types: [.int8], preparedKey: key)
        #expect(statement.preparedKey == key)
        statement.sql += " + 1"
        #expect(statement.preparedKey == nil)
        statement.preparedKey = key
        statement.append(.int8(2))
        #expect(statement.preparedKey == nil)
    }
}
