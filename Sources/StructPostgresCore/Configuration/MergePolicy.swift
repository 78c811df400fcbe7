/// What a write or delete of a model with a version (``EntityProtocol/versionKey``) does with rows whose stored
/// version is not the model's: someone changed them since they were read. Core Data's merge policies, by their names.
/// Models without a version are written as they always are, whatever the policy.
///
/// Chosen for every call in ``PostgresConfiguration/mergePolicy``, or for one call:
///
/// ```swift
/// try await service.update(entities: [book], options: .upsert.merging(.rollback))
/// ```
public struct MergePolicy: Sendable, Hashable, CustomStringConvertible {
    private enum Backing: String, Sendable {
        case error, rollback, overwrite
    }
    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// Core Data's `NSErrorMergePolicy`, the default: a call that meets a conflicting row fails with
    /// ``StructPostgresError/Code/versionConflict``, listing every such row, and changes nothing.
    public static let error = Self(.error)
    /// Core Data's `NSRollbackMergePolicy`: what is stored wins. Conflicting rows are left as they are and reported in
    /// ``UpsertResult/conflicts`` (a delete leaves them and does not count them); the other rows are written.
    public static let rollback = Self(.rollback)
    /// Core Data's `NSOverwriteMergePolicy`: the call's rows win. Every row is written (or deleted) whatever its
    /// stored version, and each updated row's version goes up by one.
    public static let overwrite = Self(.overwrite)

    /// The policy's name: `error`, `rollback` or `overwrite`.
    public var description: String { backing.rawValue }
}
