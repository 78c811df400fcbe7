extension Array where Element: EntityProtocol {
    /// Each entity's model, in order.
    ///
    /// The entity type is the caller's, so this runs unspecialized: a loop over the buffer's indexes calls
    /// `toModel()` and nothing else through witness tables, where `map` would also call the collection's `count`,
    /// `startIndex`, subscript and `index(after:)` for each element.
    func models() throws -> [Element.Model] {
        try withUnsafeBufferPointer { entities in
            try [Element.Model](unsafeUninitializedCapacity: entities.count) { models, initialized in
                for index in 0..<entities.count {
                    (models.baseAddress! + index).initialize(to: try entities[index].toModel())
                    initialized += 1
                }
            }
        }
    }
}
