import Hummingbird
import StructPostgres

/// Maps the library's errors to HTTP statuses with a JSON body (`{"error":{"message":"..."}}`): a bad value 400, a
/// unique conflict 409, a row changed since it was read 412, a pool or server that is not answering 503, and 500 for what only the server's code or
/// schema can cause (a model and its table that disagree: `undefinedColumn`, `decoding`). Messages name what and
/// where, never values.
struct DatabaseErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as StructPostgresError {
            let status = Self.status(of: error)
            if status == .internalServerError { context.logger.error("request failed", metadata: ["error": "\(error)"]) }
            throw HTTPError(status, message: error.message)
        }
    }

    static func status(of error: StructPostgresError) -> HTTPResponse.Status {
        switch error.code {
        case .uniqueViolation: .conflict
        case .versionConflict: .preconditionFailed
        case .invalidValue, .checkViolation, .notNullViolation, .foreignKeyViolation, .unsupportedPredicate:
            .badRequest
        case .poolTimeout, .connectionLost, .queryCancelled, .serializationFailure, .deadlock: .serviceUnavailable
        default: .internalServerError
        }
    }
}
