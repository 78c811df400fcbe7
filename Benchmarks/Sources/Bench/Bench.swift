import Foundation
import StructPostgres

/// The contenders and the data every workload starts from.
struct Bench {
    let service: PostgresService
    let hand: HandWritten
    let fluent: FluentContender?
    let options: Options
    /// The bench started the server on this machine: its processes' CPU time can be read.
    var serverIsLocal = false

    /// Empty tables, the authors, and books `0..<books` at version 0 (as `BenchData.book` makes them), in SQL.
    func seed(books: Int, reviews: Int = 0) async throws {
        let authors = options.authors
        try await service.execute(
            unsafeSQL: """
                TRUNCATE reviews, store_books, books, stores, authors;
                INSERT INTO authors (uuid, name)
                    SELECT ('00000001-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, 'Author ' || i FROM generate_series(0, \(authors - 1)) i;
                INSERT INTO books (uuid, title, price, publisher, author_id)
                    SELECT ('00000002-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, 'Book ' || i || ' v0', (i % 500)::float8,
                           'Publisher ' || (i % 37) || ' v0', ('00000001-0000-4000-8000-' || lpad(((i * 7) % \(authors))::text, 12, '0'))::uuid
                    FROM generate_series(0, \(books - 1)) i;
                INSERT INTO reviews (uuid, book_id, content, created_at)
                    SELECT ('00000003-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid,
                           ('00000002-0000-4000-8000-' || lpad((i % \(max(books, 1)))::text, 12, '0'))::uuid,
                           'Review ' || i || ': worth reading', to_timestamp(1700000000 - i * 60)
                    FROM generate_series(0, \(reviews - 1)) i;
                ANALYZE;
                """)
        try await settle()
    }

    /// Flushes what the last writes dirtied, so that the server's background writes do not land in the next
    /// measurement (needs a superuser, as on the throwaway cluster; elsewhere it is skipped).
    func settle() async throws {
        try? await service.execute(unsafeSQL: "CHECKPOINT")
    }

    /// Every book is stored, and a sample holds exactly what was written.
    func verify(_ books: [BenchBook], _ contender: String, total: Int? = nil) async throws {
        let stored = try await hand.count("books")
        if let total, stored != total { throw BenchError("\(contender): \(stored) books stored, expected \(total)") }
        guard stored >= books.count else { throw BenchError("\(contender): \(stored) books stored, expected at least \(books.count)") }
        for book in stride(from: 0, to: books.count, by: max(1, books.count / 50)).map({ books[$0] }) + [books[books.count - 1]] {
            guard try await hand.book(book.uuid) == book else {
                throw BenchError("\(contender): book \(book.uuid) differs from what was written")
            }
        }
    }

    /// Runs `body` once per contender per round and returns each contender's figures, round by round.
    /// Hand-written goes first in even rounds and StructPostgres in odd ones, so neither always follows the other;
    /// Fluent goes last.
    func rounds(
        _ rounds: Int, fluent useFluent: Bool = true, fluentRounds: Int = .max, _ body: (Contender) async throws -> Double
    ) async throws -> [Contender: [Double]] {
        var figures: [Contender: [Double]] = [:]
        for round in 0..<rounds {
            let order: [Contender] = round.isMultiple(of: 2) ? [.handWritten, .library, .fluent] : [.library, .handWritten, .fluent]
            for contender in order where contender != .fluent || (useFluent && fluent != nil && round < fluentRounds) {
                if let profiled = options.profiled, profiled != contender {
                    figures[contender, default: []].append(1)
                    continue
                }
                figures[contender, default: []].append(try await body(contender))
            }
        }
        return figures
    }
}

enum Contender: String, CaseIterable {
    case handWritten = "hand-written"
    case library = "StructPostgres"
    case fluent = "Fluent"
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
