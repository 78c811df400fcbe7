import Foundation
import StructPostgresCore
import StructPostgresDriver

extension PostgresAccess {
    /// Imports a JSON payload — an array of records or one record — into the models' tables: decoded
    /// through `Codable` with the options' key mapping and conversions, de-duplicated by unique key
    /// (re-importing changes nothing; a changed record updates in place), nested records written as a
    /// graph, in batches of one statement per table.
    ///
    /// ```swift
    /// let result = try await service.import(UserModel.self, from: data, options: .init(keys: .snakeCase, dates: .secondsSince1970))
    /// print(result.written.inserted, result.failures)
    /// ```
    /// - Throws: under ``ImportOptions/FailurePolicy/allOrNothing``, the first bad record's error (its path
    ///   and reason); the database is then as it was. Malformed JSON structure fails under both policies.
    public func `import`<Model: EntityConvertible & Decodable>(
        _ type: Model.Type, from data: Data, options: ImportOptions = ImportOptions()
    ) async throws -> ImportResult {
        let reader = JSONRecordReader(data: data)
        var counter = reader
        var total = 0
        while try counter.next() != nil { total += 1 }
        return try await operationPath.importRecords(Model.self, total: total, options: options) { reader }
    }

    /// Imports a JSON file, read a chunk at a time: memory does not grow with the file.
    public func `import`<Model: EntityConvertible & Decodable>(
        _ type: Model.Type, contentsOf url: URL, options: ImportOptions = ImportOptions()
    ) async throws -> ImportResult {
        try await operationPath.importRecords(Model.self, total: nil, options: options) { try JSONRecordReader(contentsOf: url) }
    }
}
