/// A row whose stored version was not the version a write or delete of it expected: someone else changed (or
/// deleted, or created) it since it was read. Named by its unique key, never by its other values.
///
/// ```swift
/// do {
///     try await service.update(entities: [book])
/// } catch let error as StructPostgresError where error.code == .versionConflict {
///     for conflict in error.conflicts { print(conflict.rowKey, conflict.version, conflict.storedVersion ?? 0) }
/// }
/// ```
public struct VersionConflict: Sendable, Hashable, CustomStringConvertible {
    /// The entity type, e.g. `BookEntity`.
    public let entity: String
    /// The table.
    public let table: String
    /// The row's unique key as errors name rows, e.g. `uuid=5F0C…`.
    public let rowKey: String
    /// The version the write had: what the model was read at (`0` for a model never stored).
    public let version: Int
    /// The version the row holds now; `nil` when there is no such row (deleted since it was read).
    public let storedVersion: Int?

    /// A conflict of the row `rowKey` of `entity`'s `table`.
    public init(entity: String, table: String, rowKey: String, version: Int, storedVersion: Int?) {
        self.entity = entity
        self.table = table
        self.rowKey = rowKey
        self.version = version
        self.storedVersion = storedVersion
    }

    /// `uuid=5F0C… (yours 2, stored 3)`; `stored none` when the row is gone.
    public var description: String {
        "\(rowKey) (yours \(version), stored \(storedVersion.map(String.init) ?? "none"))"
    }
}

extension StructPostgresError {
    /// The error of a write or delete that met `conflicts` and changed nothing: every conflicting row by its key,
    /// with the version it had and the one stored (the first ten in the message, all in ``conflicts``).
    package static func versionConflict(_ conflicts: [VersionConflict], verb: String = "written") -> StructPostgresError {
        let first = conflicts.first
        let shown = conflicts.prefix(10).map(\.description).joined(separator: ", ")
        let more = conflicts.count > 10 ? " and \(conflicts.count - 10) more" : ""
        let (rows, they) = conflicts.count == 1 ? ("1 row", "it") : ("\(conflicts.count) rows", "they")
        var error = StructPostgresError(
            .versionConflict,
            "\(rows) of \(first?.entity ?? "the entity") changed since \(they == "it" ? "it was" : "they were") read: \(shown)\(more); nothing was \(verb). Read \(they == "it" ? "it" : "them") again and retry, or choose a merge policy",
            entity: first?.entity, table: first?.table, rowKey: conflicts.count == 1 ? first?.rowKey : nil)
        error.conflicts = conflicts
        return error
    }
}
