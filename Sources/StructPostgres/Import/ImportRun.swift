import Foundation
import StructPostgresCore
import StructPostgresDriver

/// One import: reads records, decodes and checks each, writes them in batches.
struct ImportRun<Model: EntityConvertible & Decodable> {
    /// Writes a unit of work; `atomically`: even when it takes one statement.
    typealias Write = (EntityContext, _ atomically: Bool) async throws -> UpsertResult

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
                result.written = result.written + (try await write(merged, false))
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
                result.written = result.written + (try await write(work, true))
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
