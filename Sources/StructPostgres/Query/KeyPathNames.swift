@_spi(Reflection) import Swift
import Synchronization

/// The property a key path names, found by matching its offset with the type's stored fields
/// (the standard library's reflection), so typed filters and sort keys can say `\.title`.
enum KeyPathNames {
    private static let cache = Mutex<[ObjectIdentifier: [Int: String]]>([:])

    /// `"title"` for `\Book.title`; a description of the problem when the key path is not a stored property.
    static func name<Root, Value>(of keyPath: KeyPath<Root, Value>) -> String {
        guard let offset = MemoryLayout<Root>.offset(of: keyPath) else {
            return "\(keyPath) (a key path to a stored property is needed)"
        }
        let fields = cache.withLock { cache in
            if let known = cache[ObjectIdentifier(Root.self)] { return known }
            var fields: [Int: String] = [:]
            _ = _forEachField(of: Root.self, options: []) { name, offset, _, _ in
                let field = String(cString: name)
                if fields[offset] == nil { fields[offset] = field.hasPrefix("_") ? String(field.dropFirst()) : field }
                return true
            }
            cache[ObjectIdentifier(Root.self)] = fields
            return fields
        }
        return fields[offset] ?? "\(keyPath) (a key path to a stored property is needed)"
    }
}
