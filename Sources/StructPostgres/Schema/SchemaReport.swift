import StructPostgresCore
import StructPostgresDriver

/// How models and the database's schema disagree: what ``PostgresAccess/schemaReport(for:)`` finds, every
/// mismatch at once, each naming the model, the property, the table and the column.
///
/// ```swift
/// let report = try await service.schemaReport(for: [BookModel.self, ReviewModel.self])
/// if !report.matches { logger.warning("\(report)") }
/// ```
public struct SchemaReport: Sendable, CustomStringConvertible {
    /// Every mismatch found, model by model in the order given, then property by property.
    public let mismatches: [SchemaMismatch]

    /// Whether the models and the schema agree.
    public var matches: Bool { mismatches.isEmpty }

    /// One line per mismatch, or a line saying that the models match.
    public var description: String {
        guard !matches else { return "the models match the schema" }
        let count = mismatches.count == 1 ? "1 mismatch" : "\(mismatches.count) mismatches"
        return "\(count) between the models and the schema:\n" + mismatches.map { "- \($0)" }.joined(separator: "\n")
    }
}

/// One way a model and its table disagree.
public struct SchemaMismatch: Sendable, Equatable, CustomStringConvertible {
    /// What disagrees.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// The model's table does not exist.
        case missingTable
        /// A property maps to a column the table does not have: every write of the model fails.
        case missingColumn
        /// The property's Swift type cannot be stored in the column's type, or would not read back.
        case typeMismatch
        /// An optional property on a `NOT NULL` column: writing `nil` fails.
        case optionalOnNotNullColumn
        /// A non-optional property on a nullable column: reading a row where it is NULL fails.
        case nonOptionalOnNullableColumn
        /// The entity's unique key has no unique index or constraint behind it: the upsert's `ON CONFLICT` needs one.
        case uniqueKeyWithoutIndex
        /// A relationship's foreign key column or constraint is missing.
        case missingForeignKey
        /// A `NOT NULL` column without a default that the model does not write: every insert fails.
        case unwrittenRequiredColumn
        /// A property written to a column the server always fills (`GENERATED ALWAYS AS (...) STORED`, or
        /// `GENERATED ALWAYS AS IDENTITY`): the server refuses the value, so every write fails.
        case generatedColumn
        /// The model could not be inspected (its `init(from:)` refused every stand-in value).
        case uninspectableModel
        /// The entity's ``EntityProtocol/versionKey`` names no property it encodes, or its column is not
        /// `integer NOT NULL DEFAULT 1` (or `bigint`), which conditional writes need.
        case versionColumn
    }

    /// What disagrees.
    public let kind: Kind
    /// The model's entity type, e.g. `BookEntity`.
    public let entity: String
    /// The property, when the mismatch is about one.
    public let property: String?
    /// The model's table.
    public let table: String
    /// The column, when the mismatch is about one.
    public let column: String?
    /// What is wrong, and what to change.
    public let message: String

    /// `kind: entity.property (table.column): message`, on one line: a control character or line break in a name
    /// is written as an escape (`\u{A}`).
    public var description: String {
        let property = self.property.map { ".\($0)" } ?? ""
        let column = self.column.map { ".\($0)" } ?? ""
        return OneLine.escape("\(kind.rawValue): \(entity)\(property) (\(table)\(column)): \(message)")
    }
}
