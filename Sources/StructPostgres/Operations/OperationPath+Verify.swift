import StructPostgresDriver

extension OperationPath {
    /// Every mismatch between `models` and the catalog, read afresh (see ``SchemaReport``).
    func schemaReport(for models: [any EntityConvertible.Type]) async throws -> SchemaReport {
        runtime.forgetSchemas()
        return try await perform(Operation(.lookup)) { session in
            var mismatches: [SchemaMismatch] = []
            for model in models { mismatches += try await Self.mismatches(of: model.self, session) }
            return SchemaReport(mismatches: mismatches)
        }
    }

    private static func mismatches<Model: EntityConvertible>(of model: Model.Type, _ session: DatabaseSession) async throws
        -> [SchemaMismatch]
    {
        try await SchemaComparison<Model.Entity>().mismatches(session)
    }
}
