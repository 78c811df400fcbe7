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

struct BenchAuthor: StoredModel, Equatable {
    static let table = "authors"
    let uuid: UUID
    var name: String
}

/// A row of `reviews`.
struct BenchReview: StoredModel, Equatable {
    static let table = "reviews"
    let uuid: UUID
    var bookID: UUID
    var content: String
    var createdAt: Date
}

/// Deterministic data: `count` books over `authors` authors; `version` changes every field but the key.
enum BenchData {
    static func authors(_ count: Int) -> [BenchAuthor] {
        (0..<count).map { BenchAuthor(uuid: uuid(1, $0), name: "Author \($0)") }
    }

    static func books(_ range: Range<Int>, authors: Int, version: Int) -> [BenchBook] {
        range.map { book($0, authors: authors, version: version) }
    }

    static func book(_ index: Int, authors: Int, version: Int) -> BenchBook {
        BenchBook(
            uuid: uuid(2, index), title: "Book \(index) v\(version)", price: Double(index % 500) + Double(version) / 10,
            publisher: "Publisher \(index % 37) v\(version)", authorID: uuid(1, (index * 7 + version) % authors))
    }

    /// Review `index` of `reviews` spread over `books` books, created a minute apart in reverse order.
    static func review(_ index: Int, books: Int) -> BenchReview {
        BenchReview(
            uuid: uuid(3, index), bookID: uuid(2, index % books), content: "Review \(index): worth reading",
            createdAt: Date(timeIntervalSince1970: 1_700_000_000 - Double(index) * 60))
    }

    /// `0000000k-0000-4000-8000-<index>`: readable, stable between contenders.
    static func uuid(_ kind: Int, _ index: Int) -> UUID {
        var bytes: uuid_t = (0, 0, 0, UInt8(kind), 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            var value = index
            for position in stride(from: 15, through: 10, by: -1) {
                raw[position] = UInt8(value % 100 / 10 * 16 + value % 10)
                value /= 100
            }
        }
        return UUID(uuid: bytes)
    }
}
