@_spi(Reflection) import Swift
import Synchronization

/// The property a key path names, found by matching its offset and type with the type's stored fields
/// (the standard library's reflection), so typed filters and sort keys can say `\.title`.
enum KeyPathNames {
    private struct Field {
        let name: String
        let type: Any.Type
    }

    private static let cache = Mutex<[ObjectIdentifier: [Int: Field]]>([:])

    /// `"title"` for `\Book.title`.
    /// - Throws: `undefinedColumn` naming the key path when it is not a stored property of `Root` itself: a computed
    ///   property, or a path into a property's own fields (`\.address.city`), which has no column of its own.
    static func name<Root, Value>(of keyPath: KeyPath<Root, Value>) throws(StructPostgresError) -> String {
        let fields = cache.withLock { cache in
            if let known = cache[ObjectIdentifier(Root.self)] { return known }
            var fields: [Int: Field] = [:]
            _ = _forEachField(of: Root.self, options: []) { name, offset, type, _ in
                let field = String(cString: name)
                if fields[offset] == nil {
                    fields[offset] = Field(name: field.hasPrefix("_") ? String(field.dropFirst()) : field, type: type)
                }
                return true
            }
            cache[ObjectIdentifier(Root.self)] = fields
            return fields
        }
        // A path into a field's own fields can start at that field's offset: the types tell them apart.
        guard let offset = MemoryLayout<Root>.offset(of: keyPath), let field = fields[offset], field.type == Value.self else {
            throw StructPostgresError(
                .undefinedColumn,
                "key path \(keyPath) is not a stored property of \(Root.self), so it names no column (a key path to a stored property is needed; for a relationship's key write a format string, as in \"author.name == %@\")",
                entity: "\(Root.self)")
        }
        return field.name
    }
}
