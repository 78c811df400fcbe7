import BookstoreModels
import StructPostgres
import Vapor

/// Books: a search, one book with its author and reviews, and a book's reviews a page at a time or live.
struct BookController: RouteCollection {
    func boot(routes: any RoutesBuilder) throws {
        let books = routes.grouped("books")
        books.get(use: search)
        books.get(":id", use: show)
        books.get(":id", "reviews", use: reviews)
        books.get(":id", "reviews", "live", use: live)
    }

    /// `GET /books?title=earth&author=le%20guin&maxPrice=10&sort=-price&limit=20&offset=0`: books whose title and
    /// author's name contain the given text (ignoring case), at most `maxPrice`, with their authors. `sort` is
    /// `title` (the default), `price`, `-title` or `-price`.
    @Sendable
    func search(req: Request) async throws -> [BookModel] {
        var filter = Filter.constant(true)
        if let title = req.query[String.self, at: "title"] {
            filter = filter && .compare("title", .contains, title, options: .init(caseInsensitive: true))
        }
        if let author = req.query[String.self, at: "author"] {
            filter = filter && (try Filter(format: "author.name CONTAINS[c] %@", author))
        }
        if let text = req.query[String.self, at: "maxPrice"] {
            guard let maxPrice = Double(text), maxPrice.isFinite else {
                throw Abort(.badRequest, reason: "maxPrice '\(text)' is not a number")
            }
            filter = filter && .compare("price", .lessOrEqual, maxPrice)
        }
        let sort = req.query[String.self, at: "sort"] ?? "title"
        guard ["title", "price", "-title", "-price"].contains(sort) else {
            throw Abort(.badRequest, reason: "sort '\(sort)' is not title, price, -title or -price")
        }
        let key = sort.hasPrefix("-") ? SortKey.descending(String(sort.dropFirst())) : .ascending(sort)
        return try await req.store.fetch(
            BookModel.self, where: EntityFilter(filter), sortedBy: [key, .ascending("uuid")],
            limit: try req.number("limit", default: 20, in: 1...100), offset: try req.number("offset", default: 0, in: 0...Int.max),
            loading: .only("author"))
    }

    /// `GET /books/:id`: the book, its author, its reviews and their users.
    @Sendable
    func show(req: Request) async throws -> BookModel {
        let id = try req.uuid("id")
        guard let book = try await req.store.find(BookModel.self, id: id) else { throw Abort(.notFound, reason: "no book \(id)") }
        return book
    }

    /// `GET /books/:id/reviews?limit=20&offset=0`: newest first.
    @Sendable
    func reviews(req: Request) async throws -> [ReviewModel] {
        let book = try await req.existingBook()
        return try await req.store.fetch(
            ReviewModel.self, where: .equal("bookID", book), sortedBy: [.descending("createdAt"), .ascending("uuid")],
            limit: try req.number("limit", default: 20, in: 1...100), offset: try req.number("offset", default: 0, in: 0...Int.max),
            loading: .none)
    }

    /// `GET /books/:id/reviews/live?events=N`: server-sent events (see ``LiveReviews``).
    @Sendable
    func live(req: Request) async throws -> Response {
        let book = try await req.existingBook()
        let events = try req.number("events", default: Int.max, in: 1...Int.max)
        return LiveReviews(book: book, events: events).response(for: req)
    }
}
