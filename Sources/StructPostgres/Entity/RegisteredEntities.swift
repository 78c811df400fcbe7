import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// The entities of one type registered in a unit of work (see ``EntityContext``). The write layer opens it
/// to write `Entity`'s table.
protocol RegisteredTable: AnyObject {
    associatedtype Entity: EntityProtocol
    var entities: [Entity] { get set }
}

extension RegisteredTable {
    var table: String { Entity.table }
    var count: Int { entities.count }
    var entityName: String { "\(Entity.self)" }
}

final class TableEntities<Entity: EntityProtocol>: RegisteredTable {
    var entities: [Entity] = []
    /// Whether `Entity` has a relationship through a join table, whose sets registering an entity collects.
    let writesJoinTables = JoinTableRelationships.exist(in: Entity.self)
}

/// Whether an entity type has a relationship through a join table, learnt once per type: a single-row write
/// asks it on every call, and building a type's `relationships` is not free.
enum JoinTableRelationships {
    private static let known = Guarded<[ObjectIdentifier: Bool]>([:])

    static func exist<E: EntityProtocol>(in type: E.Type) -> Bool {
        let id = ObjectIdentifier(E.self)
        if let exist = known.withLock({ $0[id] }) { return exist }
        let exist = E.relationships.contains { $0.writesJoinTable }
        known.withLock { $0[id] = exist }
        return exist
    }
}

/// The sources whose join-table set of one relationship was assigned in a unit of work.
protocol RegisteredJoinSets: AnyObject {
    associatedtype Source: EntityProtocol
    var relationship: Relationship<Source> { get }
    var sources: [Source] { get set }
}

final class JoinSets<Source: EntityProtocol>: RegisteredJoinSets {
    let relationship: Relationship<Source>
    var sources: [Source] = []

    init(relationship: Relationship<Source>) { self.relationship = relationship }
}
