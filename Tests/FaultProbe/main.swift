import Foundation
import PostgresNIO
import StructPostgres

/// Runs one fault scenario against `DATABASE_URL` in a process of its own, so that a crash in it fails the
/// test that started it instead of killing the test run. Prints `outcome: <what happened>` and exits 0 when
/// the library behaved as promised, 1 when it did not.
///
/// Scenarios:
/// - `stream-lost-connection`: streams every row of `events` and terminates the stream's backend after
///   the first thousand rows; the loop must end with `connectionLost`.
/// - `driver-row-sequence`: the same on a plain PostgresNIO row sequence, to show the driver's own fault.
/// - `driver-prepared-command-tag`: PostgresNIO's `execute` of a prepared statement without rows, whose command tag
///   it reads from a row stream not yet consumed (a trap in 1.33.2).
/// - `driver-numeric-decimal`: PostgresNIO's decoding of a `numeric` beyond `Decimal`'s range (a trap in 1.33.2).

struct Event: StoredModel {
    static let table = "events"
    let uuid: UUID
    var seq: Int64
    var payload: String
}

/// A prepared statement whose result has no rows.
struct DeleteNothing: PostgresPreparedStatement {
    static let sql = "SELECT 1 WHERE false"
    typealias Row = ()
    func makeBindings() -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

func finish(_ outcome: String, ok: Bool) -> Never {
    FileHandle.standardOutput.write(Data("outcome: \(outcome)\n".utf8))
    exit(ok ? 0 : 1)
}

/// Terminates every other client backend of the database, through a connection of its own.
func terminateOthers(_ admin: PostgresService) async throws {
    _ = try await admin.query(
        """
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
        """)
}

let arguments = CommandLine.arguments.dropFirst()
guard let scenario = arguments.first, let url = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
    FileHandle.standardError.write(Data("usage: DATABASE_URL=... StructPostgresFaultProbe <scenario>\n".utf8))
    exit(64)
}

var configuration = try PostgresService.Configuration(url: url, pool: PoolOptions(maxConnections: 1))
if ProcessInfo.processInfo.environment["STRUCTPG_PROBE_DEBUG"] != nil { configuration.logger.logLevel = .debug }
try await PostgresService.withService(configuration: configuration) { service in
    try await PostgresService.withService(configuration: configuration) { admin in
        switch scenario {
        case "stream-lost-connection":
            var seen = 0
            do {
                for try await _ in service.stream(Event.self, sortedBy: [.ascending("seq")]) {
                    seen += 1
                    if seen == 1_000 { try await terminateOthers(admin) }
                }
            } catch let error as StructPostgresError {
                finish("\(error.code) after \(seen) rows", ok: error.code == .connectionLost && seen >= 1_000)
            }
            finish("the loop ended normally after \(seen) rows", ok: false)
        case "driver-row-sequence":
            var seen = 0
            do {
                try await service.withConnection { connection in
                    let rows = try await connection.query("SELECT seq, payload FROM events ORDER BY seq", logger: configuration.logger)
                    for try await _ in rows {
                        seen += 1
                        if seen == 1_000 { try await terminateOthers(admin) }
                    }
                }
            } catch {
                finish("\(type(of: error)) after \(seen) rows", ok: true)
            }
            finish("the loop ended normally after \(seen) rows", ok: false)
        case "driver-prepared-command-tag":
            let tag = try await service.withConnection { connection -> String in
                try await connection.execute(DeleteNothing(), logger: configuration.logger)
            }
            finish("the command tag came back: \(tag)", ok: false)
        case "driver-numeric-decimal":
            let value = try await service.withConnection { connection in
                try await connection.query("SELECT 1e200::numeric", logger: configuration.logger).get().rows[0].decode(Decimal.self)
            }
            finish("decoded \(value)", ok: false)
        default:
            FileHandle.standardError.write(Data("unknown scenario \(scenario)\n".utf8))
            exit(64)
        }
    }
}
