import Foundation

/// Reads `KEY=VALUE` lines from a `.env` file into the environment, as dbmate and sqlx do: variables already set
/// win, `#` starts a comment, `export ` and quotes around values are allowed.
enum DotEnv {
    static func load(_ path: String = ".env") {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        for (key, value) in parse(text) where ProcessInfo.processInfo.environment[key] == nil {
            setenv(key, value, 0)
        }
    }

    static func parse(_ text: String) -> [(String, String)] {
        text.split(whereSeparator: \.isNewline).compactMap { raw in
            var line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
            if line.hasPrefix("export ") { line = String(line.dropFirst(7)).trimmingCharacters(in: .whitespaces) }
            guard let equals = line.firstIndex(of: "=") else { return nil }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if let quote = value.first, quote == "\"" || quote == "'",
                let close = value.dropFirst().firstIndex(of: quote)
            {
                // A quoted value ends at its closing quote; a comment may follow it.
                value = String(value[value.index(after: value.startIndex)..<close])
            } else if let comment = value.range(of: " #") {
                value = value[..<comment.lowerBound].trimmingCharacters(in: .whitespaces)
            }
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
            return (key, value)
        }
    }
}
