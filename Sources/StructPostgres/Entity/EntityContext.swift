import StructPostgresCore
import StructPostgresDriver

/// The unit of work that `toEntity(context:)` fills: every entity registered here is written
/// by one ``CoreDataServiceProtocol/update(entities:options:)`` call, one batched statement per table,
/// in one transaction: referenced tables first, join-table sets last.
///
/// The same entity reached twice through the graph (an author of several books) is written once;
/// if its copies differ, the last one registered wins.
public final class EntityContext {
    /// The entities of each type, in the order their types were first registered.
    private(set) var tables: [any RegisteredTable] = []
    /// The entity type of each table: a unit of work holds a few types, found faster by a scan than by hashing.
    private var tableTypes: [ObjectIdentifier] = []
    /// The join-table sets assigned, one per relationship, in the order first assigned.
    private(set) var joinSets: [any RegisteredJoinSets] = []
    private var joinSetIndex: [String: Int] = [:]

    init() {}

    /// Converts `model` and registers its entity for writing; returns the entity.
    ///
    /// ```swift
    /// // In a book model's toEntity(context:): the author is written in the same unit of work, before the book.
    /// let authorID = try book.author.map { try context.insert($0).uuid }
    /// ```
    @discardableResult
    public func insert<Model: EntityConvertible>(_ model: Model) throws -> Model.Entity {
        let entity = try model.toEntity(context: self)
        register(entity)
        return entity
    }

    /// Registers an already built entity for writing, with the join-table sets assigned in its slots.
    public func register<Entity: EntityProtocol>(_ entity: Entity) {
        let table = entities(of: Entity.self)
        table.entities.append(entity)
        guard table.writesJoinTables else { return }
        for relationship in Entity.relationships where relationship.writesJoinTable && relationship.isAssigned(entity) {
            sets(of: relationship).sources.append(entity)
        }
    }

    /// The table of `Entity`'s entities, added when it is the first of its type.
    private func entities<Entity: EntityProtocol>(of type: Entity.Type) -> TableEntities<Entity> {
        if let index = tableTypes.firstIndex(of: ObjectIdentifier(Entity.self)),
            let known = tables[index] as? TableEntities<Entity>
        {
            return known
        }
        let table = TableEntities<Entity>()
        tableTypes.append(ObjectIdentifier(Entity.self))
        tables.append(table)
        return table
    }

    /// The sets of `relationship`, added when it is the first assigned.
    private func sets<Source: EntityProtocol>(of relationship: Relationship<Source>) -> JoinSets<Source> {
        let key = relationship.qualifiedName
        if let index = joinSetIndex[key], let known = joinSets[index] as? JoinSets<Source> { return known }
        let sets = JoinSets(relationship: relationship)
        joinSetIndex[key] = joinSets.count
        joinSets.append(sets)
        return sets
    }

    /// Takes in what `other` registered, as if it had been registered here after what is here: each type's
    /// entities and each relationship's sets after this context's, types and relationships new here last.
    func append(_ other: EntityContext) {
        for table in other.tables { take(table) }
        for (_, index) in other.joinSetIndex.sorted(by: { $0.value < $1.value }) { take(other.joinSets[index]) }
    }

    private func take<Table: RegisteredTable>(_ table: Table) {
        entities(of: Table.Entity.self).entities += table.entities
    }

    private func take<Sets: RegisteredJoinSets>(_ sets: Sets) {
        self.sets(of: sets.relationship).sources += sets.sources
    }

    /// The entities registered, when they are all of type `E` and no join-table set was assigned.
    func onlyEntities<E: EntityProtocol>(of type: E.Type) -> [E]? {
        guard tables.count == 1, joinSets.isEmpty else { return nil }
        return (tables[0] as? TableEntities<E>)?.entities
    }

    var isEmpty: Bool { tables.isEmpty && joinSets.isEmpty }
}
