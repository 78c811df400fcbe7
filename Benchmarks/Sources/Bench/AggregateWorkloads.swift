import Foundation
import PostgresNIO
import StructPostgres

/// W10: a figure and a page. `average` over every row of `books` against `SELECT avg(price) FROM books` written by hand
/// on a connection it holds; one page of 50 after a cursor (anywhere in the table) against `fetch` with `limit: 50`
/// and against the same keyset query written by hand. Calls interleaved one by one, the contender going first
/// alternating; p50 and p99 latencies. The pages read `books` by `(title, uuid)`, which an index serves (made for the
/// workload, dropped after it).
extension Bench {
    func figuresAndPages(_ report: inout Report) async throws {
        let rows = options.aggregateRows
        try await seed(books: rows)
        let calls = max(50, options.singles / 10)
        var averages: [Contender: [Double]] = [:]
        guard let expected = try await hand.client.withConnection({ try await hand.averagePrice(on: $0) }) else {
            throw BenchError("W10: no average over \(rows) books")
        }
        try await hand.client.withConnection { connection in
            for call in -10..<calls {
                for contender in call.isMultiple(of: 2) ? [Contender.handWritten, .library] : [.library, .handWritten] {
                    var average: Double?
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten: average = try await hand.averagePrice(on: connection)
                        default: average = try await service.average(\BenchBook.price, of: BenchBook.self)
                        }
                    }
                    guard let average, abs(average - expected) <= abs(expected) * 1e-12 else {
                        throw BenchError("W10 \(contender.rawValue): average \(String(describing: average)), expected \(expected)")
                    }
                    if call >= 0 { averages[contender, default: []].append(seconds * 1_000_000) }
                }
            }
        }
        report.addLatencies("W10 average over \(rows) rows", averages)

        try await service.execute(unsafeSQL: "CREATE INDEX bench_books_title_uuid ON books (title, uuid); ANALYZE books")
        do {
            try await pages(&report, rows: rows, calls: calls)
        } catch {
            try? await service.execute(unsafeSQL: "DROP INDEX IF EXISTS bench_books_title_uuid")
            throw error
        }
        try await service.execute(unsafeSQL: "DROP INDEX bench_books_title_uuid")
    }

    /// W10's pages: every page's cursor read once through the table, then pages at random depths, interleaved.
    private func pages(_ report: inout Report, rows: Int, calls: Int) async throws {
        // Every page's cursor and the row it ends after, read once through the whole table.
        var stops: [(cursor: PageCursor, after: BenchBook)] = []
        var cursor: PageCursor?
        var seen = 0
        repeat {
            let page = try await service.fetch(BenchBook.self, sortedBy: [.ascending("title")], pageSize: 50, after: cursor)
            seen += page.items.count
            if let next = page.next { stops.append((next, page.items.last!)) }
            cursor = page.next
        } while cursor != nil
        guard seen == rows else { throw BenchError("W10: the pages held \(seen) books, not \(rows)") }
        var pages: [Contender: [Double]] = [:]
        var firstPages: [Double] = []
        try await hand.client.withConnection { connection in
            for call in -10..<calls {
                let stop = stops[(max(call, 0) * 7_919) % stops.count]
                var results: [Contender: [UUID]] = [:]
                for contender in call.isMultiple(of: 2) ? [Contender.handWritten, .library] : [.library, .handWritten] {
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten: results[contender] = try await hand.page(after: stop.after, on: connection).map(\.uuid)
                        default:
                            results[contender] = try await service.fetch(
                                BenchBook.self, sortedBy: [.ascending("title")], pageSize: 50, after: stop.cursor
                            ).items.map(\.uuid)
                        }
                    }
                    if call >= 0 { pages[contender, default: []].append(seconds * 1_000_000) }
                }
                guard results[.library] == results[.handWritten], results[.library]?.count ?? 0 > 0 else {
                    throw BenchError("W10: the page after \(stop.after.uuid) differs between the contenders")
                }
                let first = try await Report.seconds {
                    _ = try await service.fetch(BenchBook.self, sortedBy: [.ascending("title"), .ascending("uuid")], limit: 50)
                }
                if call >= 0 { firstPages.append(first * 1_000_000) }
            }
        }
        report.addLatencies("W10 page of 50 after a cursor", pages)
        let (page, fetch) = (Report.median(pages[.library]!), Report.median(firstPages))
        say(
            "W10 page of 50 after a cursor against fetch(limit: 50) of the first 50 (both StructPostgres, p50): \(Int(page)) µs against \(Int(fetch)) µs, \(format(page / fetch))x"
        )
    }
}

extension HandWritten {
    /// `SELECT avg(price) FROM books`, on a connection the caller holds.
    func averagePrice(on connection: PostgresConnection) async throws -> Double? {
        let rows = try await connection.query("SELECT avg(price) FROM books", logger: logger)
        for try await average in rows.decode(Double?.self) { return average }
        return nil
    }

    /// The 50 books after `book` in `(title, uuid)` order, as a keyset page written by hand.
    func page(after book: BenchBook, on connection: PostgresConnection) async throws -> [BenchBook] {
        var books: [BenchBook] = []
        let rows = try await connection.query(
            """
            SELECT uuid, title, price, publisher, author_id FROM books WHERE (title, uuid) > (\(book.title), \(book.uuid))
            ORDER BY title, uuid LIMIT 50
            """, logger: logger)
        for try await (uuid, title, price, publisher, author) in rows.decode((UUID, String, Double, String, UUID).self) {
            books.append(BenchBook(uuid: uuid, title: title, price: price, publisher: publisher, authorID: author))
        }
        return books
    }
}
