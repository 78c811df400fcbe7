import StructPostgresCore
import StructPostgresDriver

extension OperationPath {
    /// Imports the records `reader` gives in batches: all in one transaction (or savepoint), or each batch on its
    /// own with the bad records left out and reported.
    func importRecords<Model: EntityConvertible & Decodable>(
        _ type: Model.Type, total: Int?, options: ImportOptions, reader: () throws -> JSONRecordReader
    ) async throws -> ImportResult {
        guard options.batchSize > 0 else {
            throw StructPostgresError(.invalidConfiguration, "ImportOptions.batchSize must be positive, not \(options.batchSize)")
        }
        let operation = Operation(.import, Model.Entity.self)
        let upsert = UpsertOptions.upsert.merging(runtime.configuration.mergePolicy)
        switch options.onFailure {
        case .allOrNothing:
            return try await transaction(TransactionOptions()) { transaction in
                var run = ImportRun<Model>(options: options, total: total, reader: try reader())
                let path = path(inside: transaction)
                return try await run.run { work, _ in
                    try await path.perform(operation) { try await writer($0, upsert).write(work) }
                }
            }
        case .skipAndReport:
            var run = ImportRun<Model>(options: options, total: total, reader: try reader())
            return try await run.run { work, atomically in
                guard atomically else { return try await write(work, operation, options: upsert) }
                return try await performAtomically(operation) { try await writer($0, upsert).write(work) }
            }
        }
    }
}
