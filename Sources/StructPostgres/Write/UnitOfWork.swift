import StructPostgresCore
import StructPostgresDriver

/// Converting models into a unit of work (``EntityContext``): what `toEntity(context:)` registers.
enum UnitOfWork {
    /// Converts the models. `inParallel`: ``ParallelRows/minimum`` models or more are converted in two halves at
    /// once, as if in order (the first error is the first half's).
    static func convert<Model: EntityConvertible>(_ models: ArraySlice<Model>, inParallel: Bool) async throws -> EntityContext {
        func convert(_ rows: Range<Int>) throws -> EntityContext {
            let context = EntityContext()
            for model in models[rows] { try context.insert(model) }
            return context
        }
        guard inParallel, models.count >= ParallelRows.minimum else { return try convert(models.indices) }
        let (first, second) = try await ParallelRows.halves(models.indices, convert)
        first.append(second)
        return first
    }

    /// The entity of `model` when converting it registered nothing else and assigned no join-table set: then it is
    /// written alone, as the unit of work of ``convert(_:inParallel:)`` would write it.
    static func flatEntity<Model: EntityConvertible>(of model: Model) throws -> Model.Entity? {
        let context = EntityContext()
        let entity = try model.toEntity(context: context)
        guard context.isEmpty else { return nil }
        guard JoinTableRelationships.exist(in: Model.Entity.self) else { return entity }
        return Model.Entity.relationships.contains { $0.writesJoinTable && $0.isAssigned(entity) } ? nil : entity
    }

    /// The entities of `models`, for a delete: converted without keeping what they register.
    static func entities<Model: EntityConvertible>(_ models: [Model]) async throws -> [Model.Entity] {
        func convert(_ rows: Range<Int>) throws -> [Model.Entity] {
            let context = EntityContext()
            return try models[rows].map { try $0.toEntity(context: context) }
        }
        guard models.count >= ParallelRows.minimum else { return try convert(models.indices) }
        let (first, second) = try await ParallelRows.halves(models.indices, convert)
        return first + second
    }
}
