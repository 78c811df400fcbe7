import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// The order in which an entity type's `init(from:)` asks for its keys, with the index of each key's column in a
/// select of every column: learnt from the first result decoded, so that later results find each key by one
/// comparison instead of working out its column. A key asked out of order is still found the slow way.
final class LearntKeyOrder: Sendable {
    private let learnt = Guarded<[(key: String, index: Int?)]?>(nil)

    var keys: [(key: String, index: Int?)]? { learnt.withLock { $0 } }

    func remember(_ keys: [(key: String, index: Int?)]) {
        learnt.withLock { if $0 == nil { $0 = keys } }
    }
}
