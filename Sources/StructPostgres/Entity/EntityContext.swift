/// The unit of work that `toEntity(context:)` fills: every entity registered here is written
/// by one ``CoreDataServiceProtocol/update(entities:options:)`` call, one batched statement per table.
///
/// Tables are written in the order their first entity was completed, so a related model converted
/// inside `toEntity` (an author inside a book) is written before the entity that refers to it.
public final class EntityContext {
    private var batches: [any EntityBatch] = []
    private var batchIndex: [ObjectIdentifier: Int] = [:]

    init() {}

    /// Converts `model` and registers its entity for writing; returns the entity.
    ///
    /// ```swift
    /// BookEntity(uuid: uuid, title: title, authorID: try author.map { try context.insert($0).uuid })
    /// ```
    @discardableResult
    public func insert<Model: EntityConvertible>(_ model: Model) throws -> Model.Entity {
        let entity = try model.toEntity(context: self)
        register(entity)
        return entity
    }

    /// Registers an already built entity for writing.
    public func register<Entity: EntityProtocol>(_ entity: Entity) {
        let id = ObjectIdentifier(Entity.self)
        if let index = batchIndex[id] {
            (batches[index] as! TypedEntityBatch<Entity>).entities.append(entity)
        } else {
            batchIndex[id] = batches.count
            batches.append(TypedEntityBatch<Entity>(entities: [entity]))
        }
    }

    var registeredBatches: [any EntityBatch] { batches }
}

/// The entities of one table registered in a unit of work.
protocol EntityBatch: AnyObject {
    var table: String { get }
    var entityName: String { get }
    func write(in session: DatabaseSession, options: UpsertOptions) async throws -> UpsertResult
}

final class TypedEntityBatch<Entity: EntityProtocol>: EntityBatch {
    var entities: [Entity]
    init(entities: [Entity]) { self.entities = entities }
    var table: String { Entity.table }
    var entityName: String { "\(Entity.self)" }

    func write(in session: DatabaseSession, options: UpsertOptions) async throws -> UpsertResult {
        try await session.upsert(entities, options: options)
    }
}
