import StructPostgresCore
import StructPostgresDriver

extension Operation {
    /// An operation on `entity`'s table.
    init(_ kind: Kind, _ entity: (any EntityProtocol.Type)?, rows: Int? = nil) {
        self.init(kind, table: entity?.table, rows: rows)
    }
}
