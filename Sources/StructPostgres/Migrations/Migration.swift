import Crypto
import Foundation
import StructPostgresCore
import StructPostgresDriver

/// One migration: a file `NNNN_name.sql` with an up part and an optional down part.
///
/// ```sql
/// -- migrate:up
/// CREATE TABLE books (uuid uuid PRIMARY KEY, title text);
///
/// -- migrate:down
/// DROP TABLE books;
/// ```
///
/// `-- migrate:up transaction:false` runs the up part outside a transaction, statement by statement
/// (for `CREATE INDEX CONCURRENTLY` and friends); `-- migrate:down transaction:false` does the same for down.
/// A file without markers is all up part.
public struct Migration: Sendable, Equatable {
    /// The number before the first `_` of the file name.
    public let version: Int64
    /// The rest of the file name, without `.sql`.
    public let name: String
    /// The file name, as errors and the history table show it.
    public let fileName: String
    /// The part after `-- migrate:up`, or the whole file when it has no markers.
    public let up: Part
    /// The part after `-- migrate:down`, if the file has one.
    public let down: Part?
    /// SHA-256 of the text with line endings and a byte-order mark normalized, in hex.
    public let checksum: String

    /// One direction of a migration.
    public struct Part: Sendable, Equatable {
        /// The part's SQL text.
        public let sql: String
        /// The 1-based line of the file where ``sql`` starts.
        public let firstLine: Int
        /// Whether the part runs in one transaction; `false` after `transaction:false`, which runs it statement by
        /// statement.
        public let transactional: Bool

        /// The statements, with their lines in the file.
        var statements: [SQLScript.Statement] {
            SQLScript.split(sql).map { .init(sql: $0.sql, line: $0.line + firstLine - 1) }
        }
    }

    /// `0001_create_books.sql`, `20240501120000_add_index.sql`: digits, `_`, a name of letters, digits, `_` or `-`.
    public static let fileNamePattern = "NNNN_name.sql (digits, an underscore, a name of letters, digits, '_' or '-')"

    /// Parses a migration from its file name and text.
    /// - Throws: ``StructPostgresError`` `migrationRefused`, naming the file, for a malformed name or an empty up part.
    public init(fileName: String, text: String) throws {
        guard let (version, name) = Self.parseFileName(fileName) else {
            throw StructPostgresError.refused(
                "'\(fileName)' is not a migration file name; expected \(Self.fileNamePattern)", file: fileName)
        }
        let normalized = Self.normalize(text)
        self.version = version
        self.name = name
        self.fileName = fileName
        self.checksum = SHA256.hash(data: Data(normalized.utf8)).map { String(format: "%02x", $0) }.joined()
        (self.up, self.down) = try Self.parts(of: normalized, fileName: fileName)
    }

    /// The version and name of a migration file name, or `nil` when it does not follow ``fileNamePattern``.
    public static func parseFileName(_ fileName: String) -> (version: Int64, name: String)? {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else { return nil }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let version = Int64(digits),
            !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else {
            return nil
        }
        return (version, String(name))
    }

    /// Line endings and a byte-order mark do not count.
    static func normalize(_ text: String) -> String {
        var result = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        if result.hasPrefix("\u{FEFF}") { result.removeFirst() }
        return result
    }

    private static func parts(of text: String, fileName: String) throws -> (Part, Part?) {
        let lines = text.components(separatedBy: "\n")
        var sections: [(kind: String, transactional: Bool, start: Int, lines: [String])] = []
        var preamble: [String] = []
        for (index, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let range = trimmed.range(of: #"^--\s*migrate\s*:"#, options: [.regularExpression, .caseInsensitive]) {
                let words = trimmed[range.upperBound...].lowercased().split(separator: " ")
                guard let kind = words.first, kind == "up" || kind == "down" else {
                    throw StructPostgresError.refused(
                        "unknown marker '\(trimmed)'; expected '-- migrate:up' or '-- migrate:down'", file: fileName, line: index + 1)
                }
                var transactional = true
                for option in words.dropFirst() {
                    switch option {
                    case "transaction:false": transactional = false
                    case "transaction:true": transactional = true
                    default:
                        throw StructPostgresError.refused(
                            "unknown option '\(option)'; the only option is transaction:false", file: fileName, line: index + 1)
                    }
                }
                if sections.contains(where: { $0.kind == kind }) {
                    throw StructPostgresError.refused("a second '-- migrate:\(kind)' marker", file: fileName, line: index + 1)
                }
                sections.append((String(kind), transactional, index + 2, []))
            } else if sections.isEmpty {
                preamble.append(line)
            } else {
                sections[sections.count - 1].lines.append(line)
            }
        }
        if sections.isEmpty {
            sections = [("up", true, 1, preamble)]
        } else if let stray = SQLScript.split(preamble.joined(separator: "\n")).first {
            throw StructPostgresError.refused("SQL before the first '-- migrate:' marker would never run", file: fileName, line: stray.line)
        }
        guard let upSection = sections.first(where: { $0.kind == "up" }) else {
            throw StructPostgresError.refused("no '-- migrate:up' part", file: fileName)
        }
        // An empty up part (a file `structpg migrate new` has just made) is listed as pending; applying it is refused.
        let up = Part(sql: upSection.lines.joined(separator: "\n"), firstLine: upSection.start, transactional: upSection.transactional)
        let down = sections.first { $0.kind == "down" }.map {
            Part(sql: $0.lines.joined(separator: "\n"), firstLine: $0.start, transactional: $0.transactional)
        }
        for part in [up] + (down.map { [$0] } ?? []) {
            for statement in part.statements {
                let first = statement.sql.prefix { $0.isLetter }.uppercased()
                let second = statement.sql.drop { $0.isLetter }.drop { $0.isWhitespace }.prefix { $0.isLetter }.uppercased()
                let controls = ["BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE"]
                if controls.contains(first) || (first == "PREPARE" && second == "TRANSACTION") {
                    throw StructPostgresError.refused(
                        "\(first) controls the transaction, which the migrator does; use '-- migrate:up transaction:false' to run outside one",
                        file: fileName, line: statement.line)
                }
            }
        }
        return (up, down.flatMap { $0.statements.isEmpty ? nil : $0 })
    }
}

extension StructPostgresError {
    static func refused(_ message: String, file: String? = nil, line: Int? = nil) -> StructPostgresError {
        var error = StructPostgresError(.migrationRefused, message)
        error.file = file
        error.line = line
        return error
    }
}
