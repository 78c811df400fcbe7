import BookstoreModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StructPostgres
import Testing

/// Every route over HTTP (Hummingbird's router test client) against a real PostgreSQL.
@Suite struct RouteTests {
    @Test func storesAndABookWithItsAuthorAndReviews() async throws {
        try await withApp { client, _, seed, reviews in
            try await client.execute(uri: "/stores", method: .get) { response in
                #expect(response.status == .ok)
                let stores = try decode([StoreModel].self, response)
                #expect(stores.map(\.brand) == ["Corner Books"])
                #expect(Set(stores[0].books?.compactMap(\.title) ?? []) == ["The Dispossessed", "A Wizard of Earthsea"])
            }
            try await client.execute(uri: "/books/\(seed.dispossessed)", method: .get) { response in
                #expect(response.status == .ok)
                let book = try decode(BookModel.self, response)
                #expect(book.author?.name == seed.author.name)
                #expect(book.reviews?.map(\.uuid) == reviews.map(\.uuid))
            }
            try await client.execute(uri: "/books/\(UUID())", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/books/not-a-uuid", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.text.contains("'not-a-uuid' is not a uuid"))
            }
        }
    }

    @Test func reviewsComeNewestFirstAPageAtATime() async throws {
        try await withApp { client, _, seed, reviews in
            let newestFirst = reviews.reversed().map(\.uuid)
            try await client.execute(uri: "/books/\(seed.dispossessed)/reviews?limit=2", method: .get) { response in
                let page = try decode([ReviewModel].self, response)
                #expect(page.map(\.uuid) == Array(newestFirst.prefix(2)))
            }
            try await client.execute(uri: "/books/\(seed.dispossessed)/reviews?limit=2&offset=2", method: .get) { response in
                let page = try decode([ReviewModel].self, response)
                #expect(page.map(\.uuid) == [newestFirst[2]])
            }
            try await client.execute(uri: "/books/\(seed.earthsea)/reviews", method: .get) { response in
                let page = try decode([ReviewModel].self, response)
                #expect(page.isEmpty)
            }
            for bad in ["limit=0", "limit=101", "limit=x", "offset=-1"] {
                try await client.execute(uri: "/books/\(seed.dispossessed)/reviews?\(bad)", method: .get) { response in
                    #expect(response.status == .badRequest, "\(bad)")
                    #expect(
                        response.headers[.contentType] == "application/json; charset=utf-8" || response.text.contains("error"), "\(bad)")
                }
            }
            try await client.execute(uri: "/books/\(UUID())/reviews", method: .get) { #expect($0.status == .notFound) }
        }
    }

    @Test func aReviewIsCreatedChangedAndDeletedAndBadInputIsRefused() async throws {
        try await withApp { client, service, seed, _ in
            let id = UUID()
            let created = try await client.execute(
                uri: "/books/\(seed.earthsea)/reviews", method: .post, body: body(#"{"uuid": "\#(id)", "content": "A classic."}"#)
            ) { response in
                #expect(response.status == .created)
                return try decode(ReviewModel.self, response)
            }
            #expect(created.uuid == id && created.bookID == seed.earthsea && created.content == "A classic.")
            try await client.execute(
                uri: "/books/\(seed.earthsea)/reviews", method: .post, body: body(#"{"uuid": "\#(id)", "content": "Again."}"#)
            ) { response in
                #expect(response.status == .conflict)
                #expect(response.text.contains("exists"))
            }
            let refused: [(String, String)] = [
                (#"{"content": "   "}"#, "a review needs some text"),
                (#"{"content": 42}"#, "'content' is not a String"),
                (#"{"content": "x""#, "malformed JSON"),
                (#"{"content": "\#(String(repeating: "a", count: 2_001))"}"#, "at most 2,000 characters"),
                (#"{"content": "ok", "userID": "\#(UUID())"}"#, "user"),
            ]
            for (json, message) in refused {
                try await client.execute(uri: "/books/\(seed.earthsea)/reviews", method: .post, body: body(json)) { response in
                    #expect(response.status == .badRequest, "\(message)")
                    #expect(response.text.contains("\"error\""), "\(response.text)")
                    #expect(response.text.contains(message), "\(response.text)")
                }
            }
            try await client.execute(uri: "/books/\(UUID())/reviews", method: .post, body: body(#"{"content": "x"}"#)) {
                #expect($0.status == .notFound)
            }
            try await client.execute(uri: "/reviews/\(id)", method: .put, body: body(#"{"content": "A classic, still."}"#)) { response in
                #expect(response.status == .ok)
                let changed = try decode(ReviewModel.self, response)
                #expect(changed.content == "A classic, still.")
            }
            #expect(try await service.find(ReviewModel.self, id: id)?.content == "A classic, still.")
            try await client.execute(uri: "/reviews/\(UUID())", method: .put, body: body(#"{"content": "x"}"#)) {
                #expect($0.status == .notFound)
            }
            try await client.execute(uri: "/reviews/\(id)", method: .delete) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/reviews/\(id)", method: .delete) { #expect($0.status == .notFound) }
            #expect(try await service.find(ReviewModel.self, id: id) == nil)
        }
    }

    @Test func anImportWithABadRecordWritesNothingOrSkipsItAsAsked() async throws {
        try await withApp { client, service, seed, reviews in
            let good = (0..<2).map {
                #"{"uuid": "\#(UUID())", "book_id": "\#(seed.earthsea)", "content": "imported \#($0)", "created_at": "2025-06-01T10:00:00Z"}"#
            }
            let bad = #"{"uuid": "\#(UUID())", "book_id": "\#(seed.earthsea)", "content": "no date"}"#
            let payload = "[\(good[0]), \(bad), \(good[1])]"
            try await client.execute(uri: "/reviews/import?onError=abort", method: .post, body: body(payload)) { response in
                #expect(response.status == .badRequest)
                #expect(response.text.contains("record [1]"), "\(response.text)")
            }
            #expect(try await service.count(ReviewModel.self) == reviews.count)
            try await client.execute(uri: "/reviews/import?onError=skip", method: .post, body: body(payload)) { response in
                #expect(response.status == .ok)
                let summary = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(summary?["inserted"] as? Int == 2)
                #expect((summary?["failures"] as? [[String: Any]])?.first?["index"] as? Int == 1)
            }
            #expect(try await service.count(ReviewModel.self, where: .equal("bookID", seed.earthsea)) == 2)
            try await client.execute(uri: "/reviews/import?onError=maybe", method: .post, body: body(payload)) {
                #expect($0.status == .badRequest)
            }
        }
    }
}
