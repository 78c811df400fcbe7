@testable import BookstoreVapor
import BookstoreModels
import Foundation
import StructPostgres
import StructPostgresTesting
import StructPostgresVapor
import Testing
import VaporTesting

/// A client's bad input is a 4xx, what only the server's own code or schema can cause a 5xx: through the one
/// `AbortError` conformance, which Vapor's `ErrorMiddleware` renders as `{"error": true, "reason": "..."}`.
@Suite struct ErrorStatusTests {
    @Test(arguments: [
        (StructPostgresError.Code.uniqueViolation, HTTPStatus.conflict),
        (.invalidValue, .badRequest),
        (.checkViolation, .badRequest),
        (.foreignKeyViolation, .badRequest),
        (.unsupportedPredicate, .badRequest),
        (.undefinedColumn, .internalServerError),
        (.decoding, .internalServerError),
        (.poolTimeout, .serviceUnavailable),
        (.connectionLost, .serviceUnavailable),
    ])
    func eachErrorHasTheStatusOfWhoseFaultItIs(code: StructPostgresError.Code, status: HTTPStatus) {
        let error = StructPostgresError(code, "what and where")
        #expect(error.status == status)
        #expect(error.reason == "what and where")
    }

    /// A real unique violation from PostgreSQL reaches the client as a 409 with the library's message: one review per
    /// user and book, by a unique index the test adds.
    @Test func aUniqueViolationIsA409() async throws {
        try await withBookstore { app, seed, _ in
            let service = app.structPostgres.service
            try await service.execute(unsafeSQL: "CREATE UNIQUE INDEX one_review_per_user ON reviews (book_id, user_id)")
            let user = UserModel(uuid: UUID(), name: "Shevek", role: .critic)
            try await service.update(entities: [user])
            let body = json(#"{"content": "Twice?", "userID": "\#(user.uuid)"}"#)
            try await app.testing().test(.POST, "books/\(seed.earthsea)/reviews", headers: jsonHeaders, body: body) {
                #expect($0.status == .created)
            }
            try await app.testing().test(.POST, "books/\(seed.earthsea)/reviews", headers: jsonHeaders, body: body) { res async throws in
                #expect(res.status == .conflict)
                #expect(res.text.contains(#""error":true"#) && res.text.contains("one_review_per_user"), "\(res.text)")
                #expect(!res.text.contains(user.uuid.uuidString) && !res.text.contains(user.uuid.uuidString.lowercased()), "\(res.text)")
            }
            #expect(try await service.count(ReviewModel.self, where: .equal("userID", user.uuid)) == 1)
        }
    }
}

/// The models the routes read and write match the schema the migrations make.
@Suite struct SchemaTests {
    @Test func theModelsMatchTheMigrations() async throws {
        try await TestPostgres.assertSchemaMatches(models: BookstoreSchema.models, migrations: repositoryMigrations)
    }
}
