import PostgresNIO

extension OperationPath {
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await perform(Operation(.query)) { try await $0.run(query) }
    }

    func execute(unsafeSQL sql: String) async throws {
        try await perform(Operation(.execute)) { try await $0.execute(script: sql) }
    }
}
