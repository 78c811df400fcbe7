@_spi(Reflection) import Swift
import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// The property a key path names, found by matching its offset and type with the type's stored fields
/// (the standard library's reflection), so typed filters and sort keys can say `\.title`.
enum KeyPathNames {
    private struct Field {
        let name: String
        let offset: Int
        let type: Any.Type
    }

    /// Each type's stored fields, by offset: the first field at an offset (an empty field shares its offset).
    private static let cache = Guarded<[ObjectIdentifier: [Int: Field]]>([:])

    private static func fields<Root>(of root: Root.Type) -> [Int: Field] {
        cache.withLock { cache in
            if let known = cache[ObjectIdentifier(Root.self)] { return known }
            var fields: [Int: Field] = [:]
            _ = _forEachField(of: Root.self, options: []) { name, offset, type, _ in
                let field = String(cString: name)
                if fields[offset] == nil {
                    fields[offset] = Field(name: field.hasPrefix("_") ? String(field.dropFirst()) : field, offset: offset, type: type)
                }
                return true
            }
            cache[ObjectIdentifier(Root.self)] = fields
            return fields
        }
    }

    /// `"title"` for `\Book.title`.
    /// - Throws: `undefinedColumn` naming the key path when it is not a stored property of `Root` itself: a computed
    ///   property, or a path into a property's own fields (`\.address.city`), which has no column of its own.
    static func name<Root, Value>(of keyPath: KeyPath<Root, Value>) throws(StructPostgresError) -> String {
        // A path into a field's own fields can start at that field's offset: the types tell them apart.
        guard let offset = MemoryLayout<Root>.offset(of: keyPath), let field = fields(of: Root.self)[offset], field.type == Value.self
        else {
            let reads =
                switch whatIsRead(by: keyPath) {
                case .computed: "a computed property of \(Root.self) (of type \(Value.self)), or a property wrapper's wrapped value"
                case .relatedSlot(let names):
                    names.map { "\(Root.self).\($0)" }.joined(separator: " or ") + ", a @Related relationship slot"
                case .pathIntoAField(let path): "\(path), a path into the fields of a stored property"
                }
            throw StructPostgresError(
                .undefinedColumn,
                "the key path reads \(reads), which is not a stored property of \(Root.self), so it names no column (a key path to a stored property is needed; for a relationship's key write a format string, as in \"author.name == %@\")",
                entity: "\(Root.self)")
        }
        return field.name
    }

    /// What a key path that ``name(of:)`` refused reads instead of a stored property of `Root`, for an error: a
    /// ``Related`` slot (named, found by its value's type), a path into a stored property's fields, or a computed
    /// property (whose name the runtime does not keep: its type is what can be said of it).
    static func whatIsRead<Root, Value>(by keyPath: KeyPath<Root, Value>) -> NotStored {
        let fields = fields(of: Root.self)
        if MemoryLayout<Root>.offset(of: keyPath) != nil {
            return .pathIntoAField("\(keyPath)")
        }
        let slots = fields.values.filter { ($0.type as? any RelationshipSlot.Type)?.slotValueType == Value.self }
        if !slots.isEmpty {
            return .relatedSlot(slots.sorted { $0.offset < $1.offset }.map(\.name))
        }
        return .computed
    }

    /// What a key path reads when it is not a stored property.
    enum NotStored: Equatable {
        /// The wrapped value of a ``Related`` slot, one of these (several when slots share the value's type).
        case relatedSlot([String])
        /// A stored property's own fields (`\.address.city`).
        case pathIntoAField(String)
        /// A computed property, or the wrapped value of a property wrapper other than ``Related``.
        case computed
    }
}
