import StructPostgresCore
import StructPostgresDriver

extension UpsertResult {
    /// The version `model`'s row holds after the call that returned this result, learnt from the write itself (no
    /// other query): 1 for a row inserted, one more than the model's for a row updated, the model's own for a row that
    /// already held its values. The struct you hold is brought up to date in one line:
    ///
    /// ```swift
    /// struct Counter: StoredModel {
    ///     static let table = "counters"
    ///     static let versionKey: String? = "version"
    ///     var uuid: UUID
    ///     var value: Int
    ///     var version = 0
    /// }
    ///
    /// var counter = try await service.find(Counter.self, id: id)!
    /// counter.value += 1
    /// let result = try await service.update(entities: [counter])
    /// counter.version = try result.version(of: counter)
    /// ```
    ///
    /// - Throws: ``StructPostgresError/Code/versionConflict`` when the call left the row as stored
    ///   (``MergePolicy/rollback``), with its stored version; `invalidValue` when the call wrote no row of the model: its
    ///   entity has no ``EntityProtocol/versionKey``, another key, or was left alone by ``UpsertOptions/insertIfAbsent``.
    public func version<Model: EntityConvertible>(of model: Model) throws -> Int {
        let entity = try model.toEntity(context: EntityContext())
        switch try versions.outcome(of: entity) {
        case .version(let version)?:
            return version
        case .conflict(let conflict)?:
            throw StructPostgresError.versionConflict([conflict], verb: "written to it")
        case .unknown?, nil:
            let name = "\(Model.Entity.self)"
            let reason =
                Model.Entity.versionKey == nil
                ? "\(name) has no versionKey"
                : "the call that returned this result wrote no \(name) with that key (or left it alone: insertIfAbsent)"
            throw StructPostgresError(.invalidValue, "no version to tell: \(reason)", entity: name, table: Model.Entity.table)
        }
    }
}
