/// The unit of work that `toEntity(context:)` fills: every entity registered here is written
/// by one ``CoreDataServiceProtocol/update(entities:options:)`` call, one batched statement per table,
/// in one transaction: referenced tables first, join-table sets last.
///
/// The same entity reached twice through the graph (an author of several books) is written once;
/// if its copies differ, the last one registered wins.
public final class EntityContext {
    private var batches: [any EntityBatch] = []
    /// The entity type of each batch: a unit of work holds a few types, found faster by a scan than by hashing.
    private var batchTypes: [ObjectIdentifier] = []
    private var joinSets: [any JoinSetWrite] = []
    private var joinSetIndex: [String: Int] = [:]

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

    /// Registers an already built entity for writing, with the join-table sets assigned in its slots.
    public func register<Entity: EntityProtocol>(_ entity: Entity) {
        let id = ObjectIdentifier(Entity.self)
        let batch: TypedEntityBatch<Entity>
        if let index = batchTypes.firstIndex(of: id) {
            // Registered under `Entity`'s own type id: always a batch of `Entity`.
            batch = unsafeDowncast(batches[index], to: TypedEntityBatch<Entity>.self)
            batch.entities.append(entity)
        } else {
            batch = TypedEntityBatch<Entity>(entities: [entity])
            batchTypes.append(id)
            batches.append(batch)
        }
        guard batch.writesJoinTables else { return }
        for relationship in Entity.relationships where relationship.writesJoinTable && relationship.isAssigned(entity) {
            let key = relationship.qualifiedName
            if let index = joinSetIndex[key] {
                (joinSets[index] as! JoinSetBatch<Entity>).sources.append(entity)
            } else {
                joinSetIndex[key] = joinSets.count
                joinSets.append(JoinSetBatch(relationship: relationship, sources: [entity]))
            }
        }
    }

    /// Takes in what `other` registered, as if it had been registered here after what is here: each type's
    /// entities and each relationship's sets after this context's, types and relationships new here last.
    func append(_ other: EntityContext) {
        for (id, batch) in zip(other.batchTypes, other.batches) {
            if let index = batchTypes.firstIndex(of: id) {
                batches[index].append(contentsOf: batch)
            } else {
                batchTypes.append(id)
                batches.append(batch)
            }
        }
        for (key, index) in other.joinSetIndex.sorted(by: { $0.value < $1.value }) {
            if let existing = joinSetIndex[key] {
                joinSets[existing].append(contentsOf: other.joinSets[index])
            } else {
                joinSetIndex[key] = joinSets.count
                joinSets.append(other.joinSets[index])
            }
        }
    }

    var registeredBatches: [any EntityBatch] { batches }
    var registeredJoinSets: [any JoinSetWrite] { joinSets }
    var isEmpty: Bool { batches.isEmpty && joinSets.isEmpty }
    /// How many statements writing the unit of work takes.
    var statementCount: Int {
        joinSets.count + batches.reduce(0) { $0 + ($1.count + DatabaseSession.rowsPerStatement - 1) / DatabaseSession.rowsPerStatement }
    }
}

/// The entities of one table registered in a unit of work.
protocol EntityBatch: AnyObject {
    var table: String { get }
    var entityName: String { get }
    var count: Int { get }
    /// `inParallel`: nothing else is encoded meanwhile, so a large batch may take more than one thread.
    func write(in session: DatabaseSession, options: UpsertOptions, inParallel: Bool) async throws -> UpsertResult
    /// The encoding of the batch's upsert, to run away from the connection; `nil` when the batch takes more than one statement.
    /// `inParallel`: for the first of several batches, whose encoding nothing else runs beside.
    func preparation(
        in session: DatabaseSession, options: UpsertOptions, inParallel: Bool
    ) async throws -> (@Sendable () throws -> DatabaseSession.PreparedUpsert?)?
    func send(_ prepared: DatabaseSession.PreparedUpsert, in session: DatabaseSession) async throws -> UpsertResult
    /// Appends the entities of `other`, a batch of the same entity type.
    func append(contentsOf other: any EntityBatch)
}

final class TypedEntityBatch<Entity: EntityProtocol>: EntityBatch {
    var entities: [Entity]
    let writesJoinTables = Entity.relationships.contains(where: \.writesJoinTable)
    init(entities: [Entity]) { self.entities = entities }
    var table: String { Entity.table }
    var entityName: String { "\(Entity.self)" }
    var count: Int { entities.count }

    func write(in session: DatabaseSession, options: UpsertOptions, inParallel: Bool) async throws -> UpsertResult {
        try await session.upsert(entities, options: options, inParallel: inParallel)
    }

    func preparation(
        in session: DatabaseSession, options: UpsertOptions, inParallel: Bool
    ) async throws -> (@Sendable () throws -> DatabaseSession.PreparedUpsert?)? {
        guard entities.count <= DatabaseSession.rowsPerStatement else { return nil }
        let (description, entities, runtime) = (try await session.describe(Entity.self), self.entities, session.runtime)
        return { try DatabaseSession.prepareUpsert(entities[...], description: description, options: options, runtime: runtime, inParallel: inParallel) }
    }

    func append(contentsOf other: any EntityBatch) {
        entities += unsafeDowncast(other, to: Self.self).entities
    }

    func send(_ prepared: DatabaseSession.PreparedUpsert, in session: DatabaseSession) async throws -> UpsertResult {
        try await session.sendUpsert(prepared, Entity.self)
    }
}

/// The join-table sets of one relationship assigned in a unit of work.
protocol JoinSetWrite: AnyObject {
    func write(in session: DatabaseSession) async throws -> UpsertResult
    /// Appends the sources of `other`, the sets of the same relationship.
    func append(contentsOf other: any JoinSetWrite)
}

final class JoinSetBatch<Source: EntityProtocol>: JoinSetWrite {
    let relationship: Relationship<Source>
    var sources: [Source]

    init(relationship: Relationship<Source>, sources: [Source]) {
        self.relationship = relationship
        self.sources = sources
    }

    func write(in session: DatabaseSession) async throws -> UpsertResult {
        try await session.replaceSets(relationship, of: sources)
    }

    func append(contentsOf other: any JoinSetWrite) {
        sources += (other as! Self).sources
    }
}
