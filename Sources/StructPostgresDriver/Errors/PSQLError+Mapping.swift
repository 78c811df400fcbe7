import NIOCore
import NIOPosix
import PostgresNIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StructPostgresCore

extension StructPostgresError {
    /// Wraps any error thrown by PostgresNIO, keeping SQLSTATE and context but never bound values.
    package static func from(_ error: any Error, sql: String?, revealValues: Bool = false) -> StructPostgresError {
        if let error = error as? StructPostgresError { return error }
        let sql = revealValues ? sql : sql.map(maskingLiterals)
        if error is CancellationError {
            return StructPostgresError(.queryCancelled, "the task was cancelled", sql: sql)
        }
        guard let psql = error as? PSQLError else {
            // PostgresNIO's pool fails a waiting request this way when its attempts to connect keep failing (the
            // type lives in a module of PostgresNIO's that is not public).
            if String(reflecting: type(of: error)).hasSuffix(".ConnectionPoolError") {
                return StructPostgresError(
                    .connectionLost, "cannot connect: the pool's attempts to connect keep failing (\(error))", sql: sql,
                    underlying: UnderlyingError(error))
            }
            return StructPostgresError(.client, String(describing: error), sql: sql, underlying: UnderlyingError(error))
        }
        if let info = psql.serverInfo, let mapped = ServerFields({ info[$0] }).error(sql: sql, revealValues: revealValues) {
            return mapped
        }
        switch psql.code {
        case .queryCancelled:
            return StructPostgresError(.queryCancelled, "the statement was cancelled", sql: sql)
        case .connectionError:
            let reason = psql.underlying.map(Self.connectFailure) ?? "connection failed"
            return StructPostgresError(.connectionLost, reason, sql: sql)
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown,
            .poolClosed, .sslUnsupported, .failedToAddSSLHandler:
            let reason = psql.underlying.map { ": \($0)" } ?? ""
            return StructPostgresError(.connectionLost, "connection failed (\(psql.code))\(reason)", sql: sql)
        default:
            return StructPostgresError(.client, "PostgresNIO error \(psql.code)", sql: sql)
        }
    }
}

/// The fields of an error PostgreSQL reported, by PostgresNIO's names: read from a `PSQLError`, or from an
/// `ErrorResponse` the library read itself (see ``ReadyForQueryWatcher``).
struct ServerFields {
    let field: (PSQLError.ServerInfo.Field) -> String?

    /// The fields of an `ErrorResponse`'s body, by their code bytes (`C`: SQLSTATE, `M`: message, ...).
    init(codes: [UInt8: String]) {
        self.field = { field in Self.codes[field].flatMap { codes[$0] } }
    }

    init(_ field: @escaping (PSQLError.ServerInfo.Field) -> String?) { self.field = field }

    private static let codes: [PSQLError.ServerInfo.Field: UInt8] = [
        .localizedSeverity: 0x53, .severity: 0x56, .sqlState: 0x43, .message: 0x4D, .detail: 0x44, .hint: 0x48,
        .position: 0x50, .locationContext: 0x57, .schemaName: 0x73, .tableName: 0x74, .columnName: 0x63,
        .dataTypeName: 0x64, .constraintName: 0x6E,
    ]

    subscript(_ field: PSQLError.ServerInfo.Field) -> String? { self.field(field) }

    /// The error these fields describe, or `nil` without a SQLSTATE.
    func error(sql: String?, revealValues: Bool) -> StructPostgresError? {
        guard let state = self[.sqlState] else { return nil }
        var message = self[.message] ?? "PostgreSQL error \(state)"
        if state.hasPrefix("22") && !revealValues { message = maskQuoted(message) }
        if state == SQLState.inFailedTransaction {
            message +=
                ": an earlier statement of this transaction failed and its error was caught inside the closure; let it leave the closure (the transaction rolls back), or run the statement that may fail in a nested transaction (`tx.transaction { }`, a savepoint) and catch the error there"
        }
        var mapped = StructPostgresError(
            SQLState.code(for: state), message,
            sqlState: state, table: self[.tableName], column: self[.columnName],
            constraint: self[.constraintName], sql: sql)
        mapped.hint = self[.hint]
        mapped.position = self[.position].flatMap { Int($0) }
        if revealValues { mapped.detail = self[.detail] }
        mapped.serverDetail = self[.detail].map(HiddenText.init)
        if state == SQLState.foreignKeyViolation { mapped.foreignKey = self[.detail].flatMap(foreignKeyInDetail) }
        if state == SQLState.uniqueViolation || state == SQLState.foreignKeyViolation, mapped.column == nil {
            mapped.column = self[.detail].flatMap(keyInDetail)?.columns
        }
        return mapped
    }
}

/// The key a violation's `DETAIL` quotes: `("store_code, user_name", "s, u1")` from
/// `Key (store_code, user_name)=(s, u1) already exists.` (or `... is not present in table ...`, `... is still
/// referenced from table ...`), the values as PostgreSQL prints them. Read to name columns and find rows; the values
/// are never shown.
package func keyInDetail(_ detail: String) -> (columns: String, values: String)? {
    guard detail.hasPrefix("Key ("), let equals = detail.range(of: ")=(") else { return nil }
    let rest = detail[equals.upperBound...]
    guard let end = rest.range(of: ") already exists.", options: .backwards) ?? rest.range(of: ") is ") else { return nil }
    return (String(detail[detail.index(detail.startIndex, offsetBy: 5)..<equals.lowerBound]), String(rest[..<end.lowerBound]))
}

/// `author_id=5F0C…` from `Key (author_id)=(5F0C…) is not present in table "authors".`
func foreignKeyInDetail(_ detail: String) -> String? {
    keyInDetail(detail).map { "\($0.columns)=\($0.values)" }
}

/// Data exceptions quote the offending input (`invalid input syntax for type uuid: "..."`): mask it.
func maskQuoted(_ message: String) -> String {
    var result = ""
    var inQuote = false
    for char in message {
        if char == "\"" {
            result.append(inQuote ? "****\"" : "\"")
            inQuote.toggle()
        } else if !inQuote {
            result.append(char)
        }
    }
    return inQuote ? result + "****" : result
}

/// Carries a non-`Sendable`-checked error inside ``StructPostgresError/underlying``.
struct UnderlyingError: Error, @unchecked Sendable, CustomStringConvertible {
    let error: any Error
    init(_ error: any Error) { self.error = error }
    var description: String { String(describing: error) }
}

extension StructPostgresError {
    /// Why a connection could not be opened, in words (`connection refused`, `timed out`), rather than NIO's
    /// description of every address tried.
    static func connectFailure(_ error: any Error) -> String {
        if let failure = error as? NIOConnectionError {
            if let first = failure.connectionErrors.first { return connectFailure(first.error) }
            if let dns = failure.dnsAError ?? failure.dnsAAAAError { return "the host name was not found (\(dns))" }
            return "no address of the host answered"
        }
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "connection refused"
            case ETIMEDOUT: return "timed out"
            case EHOSTUNREACH: return "host unreachable"
            case ENETUNREACH: return "network unreachable"
            case ENOENT: return "no server socket there"
            default: return String(cString: strerror(io.errnoCode)).lowercased()
            }
        }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return "timed out" }
        return "\(error)"
    }
}
