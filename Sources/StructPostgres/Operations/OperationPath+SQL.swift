import PostgresNIO

extension OperationPath {
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await perform(Operation(.query)) { try await $0.run(query) }
    }

    func fetch<Model: EntityConvertible>(_ type: Model.Type, query: PostgresQuery) async throws -> [Model] {
        try await perform(Operation(.query, Model.Entity.self)) { session in
            try await session.decoded(Model.Entity.self, query: query).map { try $0.toModel() }
        }
    }

    func execute(unsafeSQL sql: String) async throws {
        try await perform(Operation(.execute)) { try await $0.execute(script: sql) }
    }
}
