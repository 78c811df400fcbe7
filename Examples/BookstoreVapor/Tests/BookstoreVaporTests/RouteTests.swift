import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresVapor
import Testing
import VaporTesting

/// Every route through VaporTesting, against a real PostgreSQL.
@Suite struct RouteTests {
    @Test func healthStoresAndABookWithItsAuthorAndReviews() async throws {
        try await withBookstore { app, seed, reviews in
            try await app.testing().test(.GET, "health") { res async throws in
                #expect(res.status == .ok)
                #expect(try res.decoded([String: String].self)["status"] == "ok")
            }
            try await app.testing().test(.GET, "stores") { res async throws in
                #expect(res.status == .ok)
                let stores = try res.decoded([StoreModel].self)
                #expect(stores.map(\.brand) == ["Corner Books"])
                #expect(Set(stores[0].books?.compactMap(\.title) ?? []) == ["The Dispossessed", "A Wizard of Earthsea"])
            }
            try await app.testing().test(.GET, "books/\(seed.dispossessed)") { res async throws in
                #expect(res.status == .ok)
                let book = try res.decoded(BookModel.self)
                #expect(book.author?.name == seed.author.name)
                #expect(book.reviews?.map(\.uuid) == reviews.map(\.uuid))
            }
            try await app.testing().test(.GET, "books/\(UUID())") { #expect($0.status == .notFound) }
            try await app.testing().test(.GET, "books/not-a-uuid") { res async throws in
                #expect(res.status == .badRequest)
                #expect(res.text.contains("'not-a-uuid' is not a uuid"), "\(res.text)")
            }
        }
    }

    @Test func theSearchFiltersSortsAndPagesAndRefusesBadParameters() async throws {
        try await withBookstore { app, seed, _ in
            try await app.testing().test(.GET, "books?title=WIZARD") { res async throws in
                let books = try res.decoded([BookModel].self)
                #expect(books.map(\.uuid) == [seed.earthsea])
                #expect(books.first?.author?.name == seed.author.name)
            }
            try await app.testing().test(.GET, "books?author=le%20guin&sort=-price") { res async throws in
                #expect(try res.decoded([BookModel].self).map(\.uuid) == [seed.dispossessed, seed.earthsea])
            }
            try await app.testing().test(.GET, "books?maxPrice=10") { res async throws in
                #expect(try res.decoded([BookModel].self).map(\.uuid) == [seed.earthsea])
            }
            try await app.testing().test(.GET, "books?limit=1&offset=1") { res async throws in
                #expect(try res.decoded([BookModel].self).map(\.uuid) == [seed.dispossessed])
            }
            try await app.testing().test(.GET, "books?author=nobody") { res async throws in
                #expect(try res.decoded([BookModel].self).isEmpty)
            }
            for (bad, message) in [("sort=isbn", "sort 'isbn'"), ("maxPrice=cheap", "maxPrice 'cheap'"), ("limit=0", "limit '0'")] {
                try await app.testing().test(.GET, "books?\(bad)") { res async throws in
                    #expect(res.status == .badRequest, "\(bad)")
                    #expect(res.text.contains(message), "\(res.text)")
                }
            }
        }
    }

    @Test func reviewsComeNewestFirstAPageAtATime() async throws {
        try await withBookstore { app, seed, reviews in
            let newestFirst = reviews.reversed().map(\.uuid)
            try await app.testing().test(.GET, "books/\(seed.dispossessed)/reviews?limit=2") { res async throws in
                #expect(try res.decoded([ReviewModel].self).map(\.uuid) == Array(newestFirst.prefix(2)))
            }
            try await app.testing().test(.GET, "books/\(seed.dispossessed)/reviews?limit=2&offset=2") { res async throws in
                #expect(try res.decoded([ReviewModel].self).map(\.uuid) == [newestFirst[2]])
            }
            try await app.testing().test(.GET, "books/\(seed.earthsea)/reviews") { res async throws in
                #expect(try res.decoded([ReviewModel].self).isEmpty)
            }
            for bad in ["limit=0", "limit=101", "limit=x", "offset=-1"] {
                try await app.testing().test(.GET, "books/\(seed.dispossessed)/reviews?\(bad)") { res async throws in
                    #expect(res.status == .badRequest, "\(bad)")
                    #expect(res.text.contains(#""error":true"#), "\(res.text)")
                }
            }
            try await app.testing().test(.GET, "books/\(UUID())/reviews") { #expect($0.status == .notFound) }
        }
    }

    @Test func aReviewIsCreatedChangedAndDeletedAndBadInputIsRefused() async throws {
        try await withBookstore { app, seed, _ in
            let id = UUID()
            let path = "books/\(seed.earthsea)/reviews"
            try await app.testing().test(.POST, path, headers: jsonHeaders, body: json(#"{"uuid": "\#(id)", "content": "A classic."}"#)) {
                res async throws in
                #expect(res.status == .created)
                let created = try res.decoded(ReviewModel.self)
                #expect(created.uuid == id && created.bookID == seed.earthsea && created.content == "A classic.")
            }
            try await app.testing().test(.POST, path, headers: jsonHeaders, body: json(#"{"uuid": "\#(id)", "content": "Again."}"#)) {
                res async throws in
                #expect(res.status == .conflict)
                #expect(res.text.contains("exists"), "\(res.text)")
            }
            let refused: [(String, String)] = [
                (#"{"content": "   "}"#, "a review needs some text"),
                (#"{"content": 42}"#, "content"),
                (#"{"content": "x""#, "JSON"),
                (#"{"content": "\#(String(repeating: "a", count: 2_001))"}"#, "at most 2,000 characters"),
                (#"{"content": "ok", "userID": "\#(UUID())"}"#, "user"),
            ]
            for (body, message) in refused {
                try await app.testing().test(.POST, path, headers: jsonHeaders, body: json(body)) { res async throws in
                    #expect(res.status == .badRequest, "\(body.prefix(40))")
                    #expect(res.text.contains(#""error":true"#), "\(res.text)")
                    #expect(res.text.contains(message), "\(res.text)")
                }
            }
            try await app.testing().test(.POST, "books/\(UUID())/reviews", headers: jsonHeaders, body: json(#"{"content": "x"}"#)) {
                #expect($0.status == .notFound)
            }
            try await app.testing().test(.PUT, "reviews/\(id)", headers: jsonHeaders, body: json(#"{"content": "A classic, still."}"#)) {
                res async throws in
                #expect(res.status == .ok)
                #expect(try res.decoded(ReviewModel.self).content == "A classic, still.")
            }
            #expect(try await app.structPostgres.service.find(ReviewModel.self, id: id)?.content == "A classic, still.")
            try await app.testing().test(.PUT, "reviews/\(UUID())", headers: jsonHeaders, body: json(#"{"content": "x"}"#)) {
                #expect($0.status == .notFound)
            }
            try await app.testing().test(.DELETE, "reviews/\(id)") { #expect($0.status == .noContent) }
            try await app.testing().test(.DELETE, "reviews/\(id)") { #expect($0.status == .notFound) }
            #expect(try await app.structPostgres.service.find(ReviewModel.self, id: id) == nil)
        }
    }

    @Test func anImportWithABadRecordWritesNothingOrSkipsItAsAsked() async throws {
        try await withBookstore { app, seed, reviews in
            let service = app.structPostgres.service
            let good = (0..<2).map {
                #"{"uuid": "\#(UUID())", "book_id": "\#(seed.earthsea)", "content": "imported \#($0)", "created_at": "2025-06-01T10:00:00Z"}"#
            }
            let bad = #"{"uuid": "\#(UUID())", "book_id": "\#(seed.earthsea)", "content": "no date"}"#
            let payload = "[\(good[0]), \(bad), \(good[1])]"
            try await app.testing().test(.POST, "reviews/import?onError=abort", headers: jsonHeaders, body: json(payload)) {
                res async throws in
                #expect(res.status == .badRequest)
                #expect(res.text.contains("record [1]"), "\(res.text)")
            }
            #expect(try await service.count(ReviewModel.self) == reviews.count)
            try await app.testing().test(.POST, "reviews/import?onError=skip", headers: jsonHeaders, body: json(payload)) {
                res async throws in
                #expect(res.status == .ok)
                let summary = try res.decoded(ImportSummaryBody.self)
                #expect(summary.inserted == 2)
                #expect(summary.failures.first?.index == 1)
            }
            #expect(try await service.count(ReviewModel.self, where: .equal("bookID", seed.earthsea)) == 2)
            try await app.testing().test(.POST, "reviews/import?onError=maybe", headers: jsonHeaders, body: json(payload)) {
                #expect($0.status == .badRequest)
            }
        }
    }
}

/// What the import route answers, as a client reads it.
private struct ImportSummaryBody: Decodable {
    struct Failure: Decodable { var index: Int }
    var inserted: Int
    var failures: [Failure]
}
