@testable import BookstoreAPI
import BookstoreModels
import HTTPTypes
import Hummingbird
import StructPostgres
import StructPostgresTesting
import Testing

/// A client's bad input is a 4xx; what only the server's own code or schema can cause is a 5xx.
@Suite struct ErrorStatusTests {
    @Test(arguments: [
        (StructPostgresError.Code.invalidValue, HTTPResponse.Status.badRequest),
        (.checkViolation, .badRequest),
        (.uniqueViolation, .conflict),
        (.undefinedColumn, .internalServerError),
        (.decoding, .internalServerError),
        (.poolTimeout, .serviceUnavailable),
    ])
    func eachErrorHasTheStatusOfWhoseFaultItIs(code: StructPostgresError.Code, status: HTTPResponse.Status) {
        #expect(DatabaseErrorMiddleware<BasicRequestContext>.status(of: StructPostgresError(code, "x")) == status)
    }
}

/// The models the routes read and write match the schema the migrations make.
@Suite struct SchemaTests {
    @Test func theModelsMatchTheMigrations() async throws {
        try await TestPostgres.assertSchemaMatches(
            models: BookstoreSchema.models,
            migrations: ServerSettings.repositoryMigrations)
    }
}
