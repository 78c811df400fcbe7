import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension OperationPath {
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try Self.checkParameters(query)
        return try await perform(Operation(.query)) { try await $0.run(query) }
    }

    func fetch<Model: EntityConvertible>(_ type: Model.Type, query: PostgresQuery) async throws -> [Model] {
        try Self.checkParameters(query)
        return try await perform(Operation(.query, Model.Entity.self)) { session in
            try await session.decoded(Model.Entity.self, query: query).models()
        }
    }

    func execute(unsafeSQL sql: String) async throws {
        try await perform(Operation(.execute)) { try await $0.execute(script: sql) }
    }

    /// Refuses a query of the caller's whose placeholders (`$1`...) and bound values differ in number, before it is
    /// sent (the server would refuse it with a protocol error that names neither).
    static func checkParameters(_ query: PostgresQuery) throws {
        let expected = SQLScript.parameterCount(query.sql)
        guard expected != query.binds.count else { return }
        throw StructPostgresError(
            .invalidValue,
            "the query has \(expected) parameter placeholder\(expected == 1 ? "" : "s")\(expected > 0 ? " ($1...$\(expected))" : "") but \(query.binds.count) bound value\(query.binds.count == 1 ? "" : "s")",
            sql: maskingLiterals(query.sql))
    }
}
