import StructPostgres
import Vapor

/// The library's errors as HTTP statuses, for Vapor's `ErrorMiddleware`: a value the client sent that the database
/// refuses is a 400, a unique conflict a 409, a database that is not answering a 503, and what only the server's
/// own code or schema can cause (a model and its table that disagree) a 500. The reason is the error's message,
/// which names what and where but never a bound value or a password. Copy this file into your app as it is.
///
/// ```swift
/// try await req.store.update(entities: [review])   // a duplicate key: 409 {"error": true, "reason": "..."}
/// ```
extension StructPostgresError: @retroactive AbortError {
    /// The status of whose fault the error is: the client's (4xx) or the server's (5xx).
    public var status: HTTPResponseStatus {
        switch code {
        case .uniqueViolation: .conflict
        case .invalidValue, .checkViolation, .notNullViolation, .foreignKeyViolation, .unsupportedPredicate: .badRequest
        case .poolTimeout, .connectionLost, .queryCancelled, .serializationFailure, .deadlock: .serviceUnavailable
        default: .internalServerError
        }
    }

    /// The message: what failed and where, without values.
    public var reason: String { message }
}
