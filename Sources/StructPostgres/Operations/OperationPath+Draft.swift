import StructPostgresDriver

extension OperationPath {
    /// The migration that makes the schema match `models`, drafted from their mismatches (see ``MigrationDraft``).
    func draftMigration(for models: [any EntityConvertible.Type]) async throws -> MigrationDraft {
        runtime.forgetSchemas()
        return try await perform(Operation(.lookup)) { session in
            var drafter = MigrationDrafter()
            for model in models { try await Self.draft(model.self, session, &drafter) }
            return drafter.draft
        }
    }

    private static func draft<Model: EntityConvertible>(_ model: Model.Type, _ session: DatabaseSession, _ drafter: inout MigrationDrafter)
        async throws
    {
        try await drafter.add(Model.Entity.self, session)
    }
}
