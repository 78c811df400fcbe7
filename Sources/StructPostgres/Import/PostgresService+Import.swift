import Foundation

extension PostgresService {
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
        return try await runImport(Model.self, total: total, options: options) { reader }
    }

    /// Imports a JSON file, read a chunk at a time: memory does not grow with the file.
    public func `import`<Model: EntityConvertible & Decodable>(
        _ type: Model.Type, contentsOf url: URL, options: ImportOptions = ImportOptions()
    ) async throws -> ImportResult {
        try await runImport(Model.self, total: nil, options: options) { try JSONRecordReader(contentsOf: url) }
    }

    private func runImport<Model: EntityConvertible & Decodable>(
        _ type: Model.Type, total: Int?, options: ImportOptions, reader: () throws -> JSONRecordReader
    ) async throws -> ImportResult {
        guard options.batchSize > 0 else {
            throw StructPostgresError(.invalidConfiguration, "ImportOptions.batchSize must be positive, not \(options.batchSize)")
        }
        switch options.onFailure {
        case .allOrNothing:
            return try await transaction { tx in
                var run = ImportRun<Model>(options: options, total: total, reader: try reader())
                return try await run.run { work, _ in try await EntityOperations.write(work, in: tx.session, options: .upsert) }
            }
        case .skipAndReport:
            var run = ImportRun<Model>(options: options, total: total, reader: try reader())
            return try await run.run { work, statements in
                if statements == 1 {
                    return try await withSession { try await EntityOperations.write(work, in: $0, options: .upsert) }
                }
                return try await transaction { try await EntityOperations.write(work, in: $0.session, options: .upsert) }
            }
        }
    }
}

/// One import: reads records, decodes and checks each, writes them in batches.
struct ImportRun<Model: EntityConvertible & Decodable> {
    typealias Write = (EntityContext, _ statements: Int) async throws -> UpsertResult

    let options: ImportOptions
    let total: Int?
    var reader: JSONRecordReader
    private let context: ImportDecoder.Context
    private var result = ImportResult()
    private var batch: [(index: Int, model: Model)] = []
    private var reported = 0

    init(options: ImportOptions, total: Int?, reader: JSONRecordReader) {
        self.options = options
        self.total = total
        self.reader = reader
        self.context = ImportDecoder.Context(options)
    }

    mutating func run(_ write: Write) async throws -> ImportResult {
        while let record = try reader.next() {
            let index = result.records
            result.records += 1
            do {
                batch.append((index, try convert(record.bytes, offset: record.offset, index: index)))
            } catch let failure as ImportFailure {
                guard options.onFailure == .skipAndReport else {
                    throw StructPostgresError(.invalidValue, "record \(failure.path): \(failure.reason); nothing was imported")
                }
                result.failures.append(failure)
            }
            if batch.count >= options.batchSize { try await flush(write) }
        }
        try await flush(write)
        result.failures.sort { $0.index < $1.index }
        return result
    }

    /// Parses and decodes one record.
    private func convert(_ bytes: ArraySlice<UInt8>, offset: Int, index: Int) throws -> Model {
        let value: JSONValue
        do {
            value = try bytes.withUnsafeBufferPointer { try JSONParser.parse($0, base: offset) }
        } catch let error as StructPostgresError {
            throw ImportFailure(index: index, path: "[\(index)]", reason: error.message)
        }
        let model: Model
        do {
            model = try ImportDecoder(value: value, codingPath: [], context: context).decodeValue(Model.self)
        } catch let error as DecodingError {
            throw Self.failure(error, index: index)
        } catch let error as StructPostgresError {
            throw ImportFailure(index: index, path: "[\(index)]", reason: error.message)
        } catch {
            throw ImportFailure(index: index, path: "[\(index)]", reason: "\(error)")
        }
        return model
    }

    /// The batch as one unit of work. A record whose conversion throws is a failure: under skip-and-report
    /// it is left out (and the unit of work built again without its partial entities).
    private mutating func unitOfWork() throws -> EntityContext {
        while true {
            let work = EntityContext()
            do {
                for (position, record) in batch.enumerated() {
                    do {
                        try work.insert(record.model)
                    } catch let error as StructPostgresError {
                        let failure = ImportFailure(index: record.index, path: "[\(record.index)]", reason: error.message)
                        guard options.onFailure == .skipAndReport else {
                            throw StructPostgresError(.invalidValue, "record \(failure.path): \(failure.reason); nothing was imported")
                        }
                        result.failures.append(failure)
                        batch.remove(at: position)
                        throw failure
                    }
                }
                return work
            } catch is ImportFailure {
                continue
            }
        }
    }

    private mutating func flush(_ write: Write) async throws {
        defer { batch.removeAll(keepingCapacity: true) }
        if !batch.isEmpty {
            let merged = try unitOfWork()
            do {
                result.written = result.written + (try await write(merged, merged.statementCount))
            } catch let error as StructPostgresError where options.onFailure == .skipAndReport && error.sqlState != nil {
                try await writeOneByOne(write)
            } catch var error as StructPostgresError {
                if let first = batch.first?.index, let last = batch.last?.index {
                    error.message += " (records \(first)...\(last))"
                    if options.onFailure == .allOrNothing { error.message += "; nothing was imported" }
                }
                throw error
            }
        }
        if result.records > reported {
            reported = result.records
            options.progress?(ImportProgress(done: result.records, total: total))
        }
    }

    /// After a batch failed in the database: each record on its own, so only the bad ones are left out.
    private mutating func writeOneByOne(_ write: Write) async throws {
        for record in batch {
            do {
                let work = EntityContext()
                try work.insert(record.model)
                result.written = result.written + (try await write(work, max(2, work.statementCount)))
            } catch let error as StructPostgresError where error.sqlState != nil {
                result.failures.append(ImportFailure(index: record.index, path: "[\(record.index)]", reason: error.message))
            }
        }
    }

    /// `[3].author.name: missing required field`.
    static func failure(_ error: DecodingError, index: Int) -> ImportFailure {
        let (path, reason): ([any CodingKey], String)
        switch error {
        case .keyNotFound(_, let context): (path, reason) = (context.codingPath, context.debugDescription)
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            (path, reason) = (context.codingPath, withoutValue(context.debugDescription))
        @unknown default: (path, reason) = ([], "the record cannot be decoded")
        }
        var text = "[\(index)]"
        for key in path {
            if let int = key.intValue { text += "[\(int)]" } else { text += ".\(key.stringValue)" }
        }
        return ImportFailure(index: index, path: text, reason: reason)
    }

    /// The standard library's `RawRepresentable` decoding says `Cannot initialize Role from invalid String value
    /// x`: keep what was expected, drop the value.
    static func withoutValue(_ message: String) -> String {
        guard message.hasPrefix("Cannot initialize "), let range = message.range(of: " from invalid ") else { return message }
        let type = message[message.index(message.startIndex, offsetBy: 18)..<range.lowerBound]
        let rawType = message[range.upperBound...].split(separator: " ").first ?? "raw"
        return "expected a \(rawType) raw value of \(type), found one that is none of its cases"
    }
}

extension ImportFailure: Error {}
