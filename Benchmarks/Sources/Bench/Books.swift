import Foundation
import StructPostgres

/// A row of `books`, as the library stores it.
struct BenchBook: StoredModel, Equatable {
    static let table = "books"
    let uuid: UUID
    var title: String
    var price: Double
    var publisher: String
    var authorID: UUID
}

struct BenchAuthor: StoredModel {
    static let table = "authors"
    let uuid: UUID
    var name: String
}

/// Deterministic data: `count` books over `authors` authors; `version` changes every field but the key.
enum BenchData {
    static func authors(_ count: Int) -> [BenchAuthor] {
        (0..<count).map { BenchAuthor(uuid: uuid(1, $0), name: "Author \($0)") }
    }

    static func books(_ range: Range<Int>, authors: Int, version: Int) -> [BenchBook] {
        range.map { index in
            BenchBook(
                uuid: uuid(2, index), title: "Book \(index) v\(version)", price: Double(index % 500) + Double(version) / 10,
                publisher: "Publisher \(index % 37) v\(version)", authorID: uuid(1, (index * 7 + version) % authors))
        }
    }

    /// `0000000k-0000-4000-8000-<index>`: readable, stable between contenders.
    static func uuid(_ kind: Int, _ index: Int) -> UUID {
        UUID(uuidString: String(format: "%08d-0000-4000-8000-%012d", kind, index))!
    }
}
