import Foundation
import StructPostgresCore
import StructPostgresDriver

/// How ``PostgresService/import(_:from:options:)`` reads a JSON payload.
///
/// ```swift
/// var options = ImportOptions(keys: .snakeCase, dates: .secondsSince1970)
/// options.remoteNames = ["id": "uuid", "avatar": "avatarURL"]
/// options.onFailure = .skipAndReport
/// let result = try await service.import(UserModel.self, from: data, options: options)
/// ```
public struct ImportOptions: Sendable {
    /// How remote member names relate to the models' coding keys.
    public enum KeyStyle: Sendable, Equatable {
        /// Names are the coding keys themselves.
        case exact
        /// Names are snake_case (`avatar_url` for `avatarURL`); exact names are accepted too.
        case snakeCase
    }

    /// How dates arrive.
    public enum DateFormat: Sendable, Equatable {
        /// ISO 8601 strings, with or without fractional seconds (`2024-05-01T12:00:00Z`, `…00.250+02:00`).
        case iso8601
        /// Numbers (or numeric strings) of seconds since 1970.
        case secondsSince1970
        /// Numbers (or numeric strings) of milliseconds since 1970.
        case millisecondsSince1970
    }

    /// What happens to a record that cannot be decoded or stored.
    public enum FailurePolicy: Sendable, Equatable {
        /// The first bad record rolls the whole import back; the error names the record. The default.
        case allOrNothing
        /// Bad records are skipped and returned with their index and reason; good ones are stored.
        case skipAndReport
    }

    /// How remote member names relate to the models' coding keys. Default `.exact`.
    public var keys: KeyStyle
    /// Remote member names mapped to local coding keys, at any depth (`["id": "groupID"]`). Checked first.
    public var remoteNames: [String: String]
    /// How dates arrive. Default `.iso8601`.
    public var dates: DateFormat
    /// Whether numbers and booleans may arrive as strings (`"12.5"`, `"true"`). Default `true`.
    public var numbersFromStrings: Bool
    /// What happens to a record that cannot be decoded or stored. Default `.allOrNothing`.
    public var onFailure: FailurePolicy
    /// Records written per batch (one upsert statement per table per batch). Default 5,000.
    public var batchSize: Int
    /// Called after each batch is written.
    public var progress: (@Sendable (ImportProgress) -> Void)?

    /// Options for an import; each parameter defaults to its property's default.
    public init(
        keys: KeyStyle = .exact, remoteNames: [String: String] = [:], dates: DateFormat = .iso8601,
        numbersFromStrings: Bool = true, onFailure: FailurePolicy = .allOrNothing, batchSize: Int = 5_000,
        progress: (@Sendable (ImportProgress) -> Void)? = nil
    ) {
        self.keys = keys
        self.remoteNames = remoteNames
        self.dates = dates
        self.numbersFromStrings = numbersFromStrings
        self.onFailure = onFailure
        self.batchSize = batchSize
        self.progress = progress
    }
}

/// How far an import is.
public struct ImportProgress: Sendable, Equatable {
    /// Records read so far (written or skipped).
    public var done: Int
    /// All records, when known before the end (an in-memory payload); `nil` while streaming a file.
    public var total: Int?

    /// Progress of `done` records out of `total`, if known.
    public init(done: Int, total: Int?) {
        self.done = done
        self.total = total
    }
}

/// What an import did.
public struct ImportResult: Sendable {
    /// Records in the payload.
    public var records = 0
    /// What the writes did, over every table of the graph.
    public var written = UpsertResult()
    /// Records skipped under ``ImportOptions/FailurePolicy/skipAndReport``, in payload order.
    public var failures: [ImportFailure] = []
}

/// A record that was not imported, and why.
public struct ImportFailure: Sendable, Equatable, CustomStringConvertible {
    /// The record's position in the payload, from 0.
    public var index: Int
    /// Where in the record, e.g. `[3].author.name`.
    public var path: String
    /// Why the record was not imported.
    public var reason: String

    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }
}
