@testable import BookstoreAPI
import BookstoreModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StructPostgres
import Testing

/// A book's version over HTTP: the `ETag` of `GET`, the `If-Match` of `PUT`.
@Suite struct BookVersionTests {
    private func book(_ title: String, price: Double = 10) -> ByteBuffer {
        body(#"{"title": "\#(title)", "price": \#(price), "publisher": "Harper"}"#)
    }

    private func stored(_ id: UUID, _ service: PostgresService) async throws -> BookRecord? {
        try await service.find(BookRecord.self, id: id)
    }

    @Test func getSendsTheVersionAndPutWritesOnlyAtIt() async throws {
        try await withApp { client, service, seed, _ in
            let id = seed.dispossessed
            let tag = try await client.execute(uri: "/books/\(id)", method: .get) { response in
                #expect(response.status == .ok)
                let book = try decode(BookModel.self, response)
                #expect(book.title == "The Dispossessed")
                return response.headers[.eTag]
            }
            #expect(tag == #""1""#)
            try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifMatch: #""1""#], body: book("Renamed")) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.eTag] == #""2""#)
                let book = try decode(BookRecord.self, response)
                #expect(book.title == "Renamed")
            }
            try await client.execute(uri: "/books/\(id)", method: .get) { response in
                #expect(response.headers[.eTag] == #""2""#)
                let book = try decode(BookModel.self, response)
                #expect(book.title == "Renamed")
            }
            // A second write with the tag read before the first: refused, with the stored version's tag.
            try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifMatch: #""1""#], body: book("Stale")) { response in
                #expect(response.status == .preconditionFailed)
                #expect(response.headers[.eTag] == #""2""#)
                #expect(response.text.contains("changed since it was read"))
            }
            #expect(try await stored(id, service)?.title == "Renamed")
        }
    }

    @Test func putWithoutIfMatchIsRefusedAndBadTagsAreToo() async throws {
        try await withApp { client, service, seed, _ in
            let id = seed.earthsea
            try await client.execute(uri: "/books/\(id)", method: .put, body: book("No precondition")) { response in
                #expect(response.status == .preconditionRequired)
                #expect(response.text.contains("If-Match"))
            }
            try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifMatch: "*"], body: book("Any")) { response in
                #expect(response.status == .preconditionRequired)
            }
            for bad in ["1", #""x""#, #""0""#, #""-1""#] {
                try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifMatch: bad], body: book("Bad")) { response in
                    #expect(response.status == .badRequest, "\(bad)")
                }
            }
            try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifMatch: #"W/"1""#], body: book("Weak", price: -1)) {
                response in
                #expect(response.status == .badRequest, "a negative price")
            }
            try await client.execute(uri: "/books/\(UUID())", method: .put, headers: [.ifMatch: #""1""#], body: book("Nowhere")) {
                response in
                #expect(response.status == .preconditionFailed, "no such book: the precondition fails")
                #expect(response.headers[.eTag] == nil)
            }
            let unchanged = try await stored(id, service)
            #expect(unchanged?.title == "A Wizard of Earthsea" && unchanged?.version == 1)
        }
    }

    @Test func ifNoneMatchCreatesABookOnce() async throws {
        try await withApp { client, _, _, _ in
            let id = UUID()
            try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifNoneMatch: "*"], body: book("New")) { response in
                #expect(response.status == .created)
                #expect(response.headers[.eTag] == #""1""#)
            }
            try await client.execute(uri: "/books/\(id)", method: .put, headers: [.ifNoneMatch: "*"], body: book("Again")) { response in
                #expect(response.status == .preconditionFailed)
                #expect(response.headers[.eTag] == #""1""#)
            }
        }
    }

    /// Two clients read the same book and both save it at once, round after round: one wins, the other is told, and
    /// the book holds the winner's title. Without the version the loser would silently undo the winner's change.
    @Test func twoClientsRacingOverOneBookNeverLoseAnEdit() async throws {
        try await withApp { client, service, seed, _ in
            let id = seed.dispossessed
            for round in 1...10 {
                let tag = try await client.execute(uri: "/books/\(id)", method: .get) { $0.headers[.eTag] }
                let outcomes = try await withThrowingTaskGroup(of: (String, HTTPResponse.Status).self) { group in
                    for name in ["alice", "bob"] {
                        group.addTask {
                            let title = "\(name) \(round)"
                            let status = try await client.execute(
                                uri: "/books/\(id)", method: .put, headers: [.ifMatch: tag ?? ""], body: book(title)
                            ) { $0.status }
                            return (title, status)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let winners = outcomes.filter { $0.1 == .ok }
                #expect(winners.count == 1, "round \(round): \(outcomes)")
                #expect(outcomes.filter { $0.1 == .preconditionFailed }.count == 1, "round \(round): \(outcomes)")
                let saved = try await stored(id, service)
                #expect(saved?.title == winners.first?.0 && saved?.version == round + 1, "round \(round)")
            }
        }
    }
}
