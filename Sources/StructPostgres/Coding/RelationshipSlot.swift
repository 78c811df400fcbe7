import StructPostgresCore
import StructPostgresDriver

/// Lets the row coders recognise a slot whatever its value type.
protocol RelationshipSlot {
    static var unloadedSlot: Self { get }
    /// The type of the wrapped value (`AuthorModel?`, `[ReviewModel]`): what a key path through the slot reads.
    static var slotValueType: Any.Type { get }
}
