import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// How property names (coding keys) become column names.
public enum ColumnNaming: Sendable {
    /// `authorID` -> `author_id`, `avatarURL` -> `avatar_url`; keys already in snake_case stay as they are.
    case snakeCase
    /// The coding key's string, unchanged.
    case verbatim

    /// The column name for a coding key's string value.
    public func column(for key: String) -> String {
        switch self {
        case .verbatim: key
        case .snakeCase: Self.cachedSnakeCase(key)
        }
    }

    /// Coding keys are few and converted for every row: convert each once.
    private static let converted = Guarded<[String: String]>([:])

    private static func cachedSnakeCase(_ key: String) -> String {
        if let known = converted.withLock({ $0[key] }) { return known }
        let column = snakeCase(key)
        converted.withLock { cache in
            if cache.count < 10_000 { cache[key] = column }
        }
        return column
    }

    /// Splits camelCase into lowercase words joined by `_`, keeping acronyms together.
    ///
    /// `myURLProperty` -> `my_url_property`, `userID2` -> `user_id2`, `already_snake` -> `already_snake`.
    static func snakeCase(_ key: String) -> String {
        let chars = Array(key)
        guard !chars.isEmpty else { return key }
        var result = ""
        result.reserveCapacity(chars.count + 4)
        for (index, char) in chars.enumerated() {
            if char.isUppercase, index > 0 {
                let previous = chars[index - 1]
                let nextIsLower = index + 1 < chars.count && chars[index + 1].isLowercase
                let startsWord = previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower)
                if startsWord && previous != "_" { result.append("_") }
            }
            result.append(contentsOf: char.lowercased())
        }
        return result
    }
}
