import BookstoreModels
import Foundation
import HummingbirdTesting
import StructPostgres
import Testing

/// The paged book list with its `next` links, a book's rating and the books per author, over HTTP.
@Suite struct FigureRouteTests {
    private struct Page: Decodable {
        var items: [BookModel]
        var next: String?
        var total: Int?
    }

    @Test func theBookListIsPagedWithNextLinksUntilTheLastPage() async throws {
        try await withApp { client, service, seed, _ in
            let more = (0..<5).map {
                BookModel(uuid: UUID(), title: "Volume \($0)", price: Double($0), publisher: "Ace", author: seed.author)
            }
            try await service.update(entities: more)
            var uri: String? = "/books?pageSize=2&total=true"
            var titles: [String] = []
            var pages = 0
            while let next = uri {
                let page = try await client.execute(uri: next, method: .get) { response in
                    #expect(response.status == .ok)
                    return try decode(Page.self, response)
                }
                #expect(page.items.count <= 2 && page.items.allSatisfy { $0.author?.name == seed.author.name })
                if pages == 0 { #expect(page.total == 7) }
                titles += page.items.compactMap(\.title)
                uri = page.next
                pages += 1
            }
            #expect(pages == 4)
            #expect(titles == (more.compactMap(\.title) + ["The Dispossessed", "A Wizard of Earthsea"]).sorted())
            let ace = try await client.execute(uri: "/books?pageSize=3&publisher=Ace", method: .get) { try decode(Page.self, $0) }
            #expect(ace.items.map(\.title) == ["Volume 0", "Volume 1", "Volume 2"] && ace.next?.contains("publisher=Ace") == true)
            let rest = try await client.execute(uri: ace.next!, method: .get) { try decode(Page.self, $0) }
            #expect(rest.items.map(\.title) == ["Volume 3", "Volume 4"] && rest.next == nil)
            // A cursor of another filter, one the service did not seal, and text that is no cursor: 400, by name.
            let cursor = String(ace.next!.split(separator: "after=")[1].prefix { $0 != "&" })
            for (query, message) in [
                ("after=\(cursor)", "another filter"),
                ("after=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not issued by this service"),
                ("after=not%20a%20cursor", "'after' is not a page cursor"),
            ] {
                try await client.execute(uri: "/books?\(query)", method: .get) { response in
                    #expect(response.status == .badRequest, "\(query)")
                    #expect(response.text.contains(message), "\(response.text)")
                }
            }
        }
    }

    @Test func aBooksRatingAndTheBooksPerAuthor() async throws {
        try await withApp { client, service, seed, reviews in
            var rated = reviews
            rated[0].stars = 5
            rated[1].stars = 2
            try await service.update(entities: rated)
            try await client.execute(uri: "/books/\(seed.dispossessed)/rating", method: .get) { response in
                #expect(response.status == .ok)
                let rating = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(rating?["reviews"] as? Int == 3 && rating?["rated"] as? Int == 2 && rating?["stars"] as? Double == 3.5)
            }
            try await client.execute(uri: "/books/\(seed.earthsea)/rating", method: .get) { response in
                let rating = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(rating?["reviews"] as? Int == 0 && rating?["stars"] == nil)
            }
            try await client.execute(uri: "/books/\(UUID())/rating", method: .get) { #expect($0.status == .notFound) }
            let other = AuthorModel(uuid: UUID(), name: "Frank Herbert")
            try await service.update(entities: [BookModel(uuid: UUID(), title: "Dune", price: 15, author: other)])
            try await client.execute(uri: "/authors/books", method: .get) { response in
                let shelves = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [[String: Any]]
                #expect(shelves?.map { $0["name"] as? String } == [seed.author.name, "Frank Herbert"])
                #expect(shelves?.map { $0["books"] as? Int } == [2, 1])
                #expect(shelves?.first?["averagePrice"] as? Double == 10.75)
            }
        }
    }

    @Test func aReviewsStarsAreOneToFive() async throws {
        try await withApp { client, service, seed, _ in
            try await client.execute(uri: "/books/\(seed.earthsea)/reviews", method: .post, body: body(#"{"content": "Yes", "stars": 4}"#))
            { response in
                #expect(response.status == .created)
                let review = try decode(ReviewModel.self, response)
                #expect(review.stars == 4)
            }
            try await client.execute(uri: "/books/\(seed.earthsea)/reviews", method: .post, body: body(#"{"content": "No", "stars": 6}"#)) {
                response in
                #expect(response.status == .badRequest && response.text.contains("stars: one to five, got 6"))
            }
            #expect(try await service.average(\ReviewModel.stars, of: ReviewModel.self, where: \.bookID == seed.earthsea) == 4)
        }
    }
}
