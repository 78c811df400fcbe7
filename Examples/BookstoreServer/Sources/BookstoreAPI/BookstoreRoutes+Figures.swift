import BookstoreModels
import Foundation
import Hummingbird
import StructPostgres

/// The book store's lists by pages and its figures.
///
/// - `GET /books?pageSize=20&after=...&publisher=...&total=true`: the books by title, a page at a time; `next` is the
///   link to the following page (absent on the last), `total` the number of books when asked for.
/// - `GET /books/{id}/rating`: how many reviews a book has, how many rate it, and their average stars.
/// - `GET /authors/books`: per author, the number of books and their average price, the most prolific first.
extension BookstoreRoutes {
    func addFiguresAndPages(to router: Router<BasicRequestContext>) {
        router.get("books") { request, _ in
            let query = request.uri.queryParameters
            let pageSize = try Self.number(query.get("pageSize"), name: "pageSize", default: 20, range: 1...100)
            let publisher = query.get("publisher")
            var cursor: PageCursor?
            if let after = query.get("after") {
                guard let parsed = PageCursor(after) else { throw HTTPError(.badRequest, message: "'after' is not a page cursor") }
                cursor = parsed
            }
            let page = try await service.fetch(
                BookModel.self, where: publisher.map { .equal("publisher", $0) }, sortedBy: [.ascending("title")], pageSize: pageSize,
                after: cursor, includingTotal: query.get("total") == "true", loading: .only("author"))
            var next: String?
            if let after = page.next {
                var link = "/books?pageSize=\(pageSize)&after=\(after)"
                if let publisher, let escaped = publisher.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                    link += "&publisher=\(escaped)"
                }
                next = link
            }
            return try JSON.response(BookPage(items: page.items, next: next, total: page.total))
        }
        router.get("books/:id/rating") { _, context in
            let book = try await existingBook(context)
            let (reviews, rated, stars) = try await service.aggregate(
                of: ReviewModel.self, .count, .count(\.stars), .average(\.stars), where: \.bookID == book)
            return try JSON.response(Rating(book: book, reviews: reviews, rated: rated, stars: stars))
        }
        router.get("authors/books") { _, _ in
            let shelves = try await service.groups(
                of: BookModel.self, by: \.authorID, .count.named("books"), .average(\.price),
                where: \.authorID != nil, sortedBy: [.descending(.count), .ascending(\.authorID)], as: AuthorShelf.self)
            let authors = try await service.fetch(AuthorModel.self, where: .in(\.uuid, shelves.compactMap(\.authorID)))
            let names = Dictionary(uniqueKeysWithValues: authors.map { ($0.uuid, $0.name) })
            return try JSON.response(
                shelves.map { shelf in
                    AuthorBooks(
                        authorID: shelf.authorID, name: shelf.authorID.flatMap { names[$0] }, books: shelf.books,
                        averagePrice: shelf.averagePrice)
                })
        }
    }
}

/// A page of books and the link to the next one.
struct BookPage: Encodable {
    var items: [BookModel]
    var next: String?
    var total: Int?
}

/// A book's reviews counted and their stars averaged.
struct Rating: Encodable {
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
struct AuthorBooks: Encodable {
    var authorID: UUID?
    var name: String?
    var books: Int
    var averagePrice: Double?
}
