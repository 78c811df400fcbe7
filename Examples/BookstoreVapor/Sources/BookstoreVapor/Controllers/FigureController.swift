import BookstoreModels
import Foundation
import StructPostgres
import Vapor

/// The book store's figures and its list by keyset pages.
///
/// - `GET /books/pages?pageSize=20&after=...&publisher=...&total=true`: the books by title, a page at a time; `next`
///   is the link to the following page (absent on the last), `total` the number of books when asked for.
/// - `GET /books/:id/rating`: how many reviews a book has, how many rate it, and their average stars.
/// - `GET /authors/books`: per author, the number of books and their average price, the most prolific first.
struct FigureController: RouteCollection {
    func boot(routes: any RoutesBuilder) throws {
        routes.get("books", "pages", use: pages)
        routes.get("books", ":id", "rating", use: rating)
        routes.get("authors", "books", use: booksPerAuthor)
    }

    /// `GET /books/pages?pageSize=20&after=...&publisher=Ace&total=true`: a page of books with their authors. A cursor
    /// of another filter, or from before a restart, is a 400 (`invalidValue`, through `StructPostgresError+AbortError`).
    @Sendable
    func pages(req: Request) async throws -> BookPage {
        let pageSize = try req.number("pageSize", default: 20, in: 1...100)
        let publisher = req.query[String.self, at: "publisher"]
        var cursor: PageCursor?
        if let after = req.query[String.self, at: "after"] {
            guard let parsed = PageCursor(after) else { throw Abort(.badRequest, reason: "'after' is not a page cursor") }
            cursor = parsed
        }
        let page = try await req.store.fetch(
            BookModel.self, where: publisher.map { .equal("publisher", $0) }, sortedBy: [.ascending("title")], pageSize: pageSize,
            after: cursor, includingTotal: req.query[String.self, at: "total"] == "true", loading: .only("author"))
        let next = page.next.map { after in
            var link = "/books/pages?pageSize=\(pageSize)&after=\(after)"
            if let publisher, let escaped = publisher.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                link += "&publisher=\(escaped)"
            }
            return link
        }
        return BookPage(items: page.items, next: next, total: page.total)
    }

    /// `GET /books/:id/rating`: one statement, three figures; `stars` is absent when no review rates the book.
    @Sendable
    func rating(req: Request) async throws -> Rating {
        let book = try await req.existingBook()
        let (reviews, rated, stars) = try await req.store.aggregate(
            of: ReviewModel.self, .count, .count(\.stars), .average(\.stars), where: \.bookID == book)
        return Rating(book: book, reviews: reviews, rated: rated, stars: stars)
    }

    /// `GET /authors/books`: one grouped statement decoded by name, then the authors' names.
    @Sendable
    func booksPerAuthor(req: Request) async throws -> [AuthorBooks] {
        let shelves = try await req.store.groups(
            of: BookModel.self, by: \.authorID, .count.named("books"), .average(\.price),
            where: \.authorID != nil, sortedBy: [.descending(.count), .ascending(\.authorID)], as: AuthorShelf.self)
        let authors = try await req.store.fetch(AuthorModel.self, where: .in(\.uuid, shelves.compactMap(\.authorID)))
        let names = Dictionary(uniqueKeysWithValues: authors.map { ($0.uuid, $0.name) })
        return shelves.map { shelf in
            AuthorBooks(
                authorID: shelf.authorID, name: shelf.authorID.flatMap { names[$0] }, books: shelf.books, averagePrice: shelf.averagePrice)
        }
    }
}

/// A page of books and the link to the next one.
struct BookPage: Content {
    var items: [BookModel]
    var next: String?
    var total: Int?
}

/// A book's reviews counted and their stars averaged.
struct Rating: Content {
    var book: UUID
    var reviews: Int
    var rated: Int
    var stars: Double?
}

/// One author's books, as a grouped query's row decodes by name.
struct AuthorShelf: Decodable, Sendable {
    var authorID: UUID?
    var books: Int
    var averagePrice: Double?
}

/// One author's books, with the author's name.
struct AuthorBooks: Content {
    var authorID: UUID?
    var name: String?
    var books: Int
    var averagePrice: Double?
}
