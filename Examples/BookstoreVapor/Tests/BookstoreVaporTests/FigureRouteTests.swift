import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresVapor
import Testing
import VaporTesting

/// The books by keyset pages with their `next` links, a book's rating and the books per author, through VaporTesting.
@Suite struct FigureRouteTests {
    private struct Page: Decodable {
        var items: [BookModel]
        var next: String?
        var total: Int?
    }

    @Test func theBooksComeByPagesWithNextLinksUntilTheLastPage() async throws {
        try await withBookstore { app, seed, _ in
            let service = app.structPostgres.service
            let more = (0..<5).map {
                BookModel(uuid: UUID(), title: "Volume \($0)", price: Double($0), publisher: "Ace", author: seed.author)
            }
            try await service.update(entities: more)
            var uri: String? = "/books/pages?pageSize=2&total=true"
            var titles: [String] = []
            var pages = 0
            while let next = uri {
                let res = try await app.testing().sendRequest(.GET, next)
                #expect(res.status == .ok, "\(res.text)")
                let page = try res.decoded(Page.self)
                #expect(page.items.count <= 2 && page.items.allSatisfy { $0.author?.name == seed.author.name })
                if pages == 0 { #expect(page.total == 7) }
                titles += page.items.compactMap(\.title)
                uri = page.next
                pages += 1
            }
            #expect(pages == 4)
            #expect(titles == (more.compactMap(\.title) + ["The Dispossessed", "A Wizard of Earthsea"]).sorted())
            let ace = try await app.testing().sendRequest(.GET, "/books/pages?pageSize=3&publisher=Ace").decoded(Page.self)
            #expect(ace.items.map(\.title) == ["Volume 0", "Volume 1", "Volume 2"] && ace.next?.contains("publisher=Ace") == true)
            let rest = try await app.testing().sendRequest(.GET, ace.next!).decoded(Page.self)
            #expect(rest.items.map(\.title) == ["Volume 3", "Volume 4"] && rest.next == nil)
            // A cursor of another filter, one this service did not seal, text that is no cursor: 400, saying which.
            let cursor = String(ace.next!.split(separator: "after=")[1].prefix { $0 != "&" })
            for (query, message) in [
                ("after=\(cursor)", "another filter"),
                ("after=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not issued by this service"),
                ("after=not%20a%20cursor", "'after' is not a page cursor"), ("pageSize=0", "pageSize '0'"),
            ] {
                try await app.testing().test(.GET, "/books/pages?\(query)") { res async throws in
                    #expect(res.status == .badRequest, "\(query)")
                    #expect(res.text.contains(message), "\(res.text)")
                }
            }
        }
    }

    @Test func aBooksRatingAndTheBooksPerAuthor() async throws {
        try await withBookstore { app, seed, reviews in
            let service = app.structPostgres.service
            var rated = reviews
            rated[0].stars = 5
            rated[1].stars = 2
            try await service.update(entities: rated)
            try await app.testing().test(.GET, "books/\(seed.dispossessed)/rating") { res async throws in
                #expect(res.status == .ok)
                let rating = try res.decoded(RatingBody.self)
                #expect(rating.book == seed.dispossessed && rating.reviews == 3 && rating.rated == 2 && rating.stars == 3.5)
            }
            try await app.testing().test(.GET, "books/\(seed.earthsea)/rating") { res async throws in
                let rating = try res.decoded(RatingBody.self)
                #expect(rating.reviews == 0 && rating.rated == 0 && rating.stars == nil)
            }
            try await app.testing().test(.GET, "books/\(UUID())/rating") { #expect($0.status == .notFound) }
            let other = AuthorModel(uuid: UUID(), name: "Frank Herbert")
            try await service.update(entities: [BookModel(uuid: UUID(), title: "Dune", price: 15, author: other)])
            try await app.testing().test(.GET, "authors/books") { res async throws in
                let shelves = try res.decoded([ShelfBody].self)
                #expect(shelves.map(\.name) == [seed.author.name, "Frank Herbert"])
                #expect(shelves.map(\.books) == [2, 1])
                #expect(shelves.map(\.averagePrice) == [10.75, 15])
            }
        }
    }

    @Test func aReviewsStarsAreOneToFive() async throws {
        try await withBookstore { app, seed, _ in
            let path = "books/\(seed.earthsea)/reviews"
            try await app.testing().test(.POST, path, headers: jsonHeaders, body: json(#"{"content": "Yes", "stars": 4}"#)) {
                res async throws in
                #expect(res.status == .created)
                #expect(try res.decoded(ReviewModel.self).stars == 4)
            }
            for stars in [0, 6] {
                try await app.testing().test(.POST, path, headers: jsonHeaders, body: json(#"{"content": "No", "stars": \#(stars)}"#)) {
                    res async throws in
                    #expect(res.status == .badRequest && res.text.contains("stars: one to five, got \(stars)"), "\(res.text)")
                }
            }
            let service = app.structPostgres.service
            #expect(try await service.average(\ReviewModel.stars, of: ReviewModel.self, where: \.bookID == seed.earthsea) == 4)
        }
    }
}

/// What the rating route answers, as a client reads it.
private struct RatingBody: Decodable {
    var book: UUID
    var reviews: Int
    var rated: Int
    var stars: Double?
}

/// One row of the books per author, as a client reads it.
private struct ShelfBody: Decodable {
    var name: String?
    var books: Int
    var averagePrice: Double?
}
