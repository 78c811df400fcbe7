import StructPostgresCore
import StructPostgresDriver

/// Checking that models and the schema the migrations made agree, before a write or a read finds out.
extension PostgresAccess {
    /// Compares each model with its table in the catalog and returns every mismatch at once (an empty report when
    /// they agree): a missing table or column, a Swift type the column cannot hold, optionality against `NOT NULL`,
    /// a unique key without a unique index, a relationship without its foreign key, a required column the model
    /// does not write. The types are judged by the rules a write applies.
    ///
    /// ```swift
    /// let report = try await service.schemaReport(for: [BookModel.self, ReviewModel.self])
    /// for mismatch in report.mismatches { print(mismatch) }
    /// ```
    public func schemaReport(for models: [any EntityConvertible.Type]) async throws -> SchemaReport {
        try await operationPath.schemaReport(for: models)
    }

    /// Throws ``StructPostgresError/Code-swift.struct/schemaMismatch`` listing every mismatch between the models and
    /// their tables (see ``schemaReport(for:)``): for a test, or a check when the app starts.
    ///
    /// ```swift
    /// try await service.verifySchema(of: [BookModel.self, ReviewModel.self, UserModel.self])
    /// ```
    public func verifySchema(of models: [any EntityConvertible.Type]) async throws {
        let report = try await schemaReport(for: models)
        guard report.matches else { throw StructPostgresError(.schemaMismatch, report.description) }
    }
}

/// Drafting the migration a model change needs.
extension PostgresAccess {
    /// The migration that would make the schema match `models`, for review (see ``MigrationDraft``): `CREATE TABLE`
    /// for a model without a table (its unique key as primary key, the foreign keys of its to-one relationships),
    /// `ADD COLUMN` for a new property (nullable when the table has rows), `CREATE UNIQUE INDEX CONCURRENTLY` for a
    /// unique key without an index, and a `-- review:` line for everything else. It never drops or changes a type.
    ///
    /// ```swift
    /// let draft = try await service.draftMigration(for: [BookModel.self])
    /// print(draft.files.first ?? "nothing to change")
    /// ```
    public func draftMigration(for models: [any EntityConvertible.Type]) async throws -> MigrationDraft {
        try await operationPath.draftMigration(for: models)
    }
}
