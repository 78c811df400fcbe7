import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

extension DatabaseSession {
    func runTagged(_ statement: Statement, _ description: EntityDescription) async throws -> [PostgresRow] {
        try await tagged(description) { try await run(statement) }
    }

    /// Runs `body`; a ``StructPostgresError`` it throws names the entity and table of `description`.
    func tagged<T>(_ description: EntityDescription, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StructPostgresError {
            throw error.with(entity: description.entity, table: description.schema.table)
        }
    }
}
