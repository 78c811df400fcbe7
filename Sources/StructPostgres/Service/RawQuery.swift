import PostgresNIO

extension PostgresService {
    /// Runs a PostgresNIO query (values interpolated into it are bound, never spliced) and returns its rows.
    ///
    /// ```swift
    /// let rows = try await service.query("SELECT title FROM books WHERE price < \(limit)")
    /// ```
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withSession { try await $0.run(query) }
    }
}

extension PostgresTransaction {
    /// Runs a PostgresNIO query inside the transaction and returns its rows.
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try ensureActive()
        return try await session.run(query)
    }
}

extension DatabaseSession {
    func run(_ query: PostgresQuery) async throws -> [PostgresRow] {
        var statement = Statement(sql: query.sql)
        statement.bindings = query.binds
        return try await run(statement)
    }
}
