import Foundation
import Logging
import StructPostgres
import StructPostgresTesting
import Synchronization

/// Records the SQL of every statement a service sends.
final class StatementLog: Sendable {
    private let statements = Mutex<[String]>([])

    var all: [String] { statements.withLock { $0 } }
    func reset() { statements.withLock { $0.removeAll() } }
    func record(_ event: QueryEvent) { statements.withLock { $0.append(event.sql) } }

    func attach(to configuration: inout PostgresService.Configuration) {
        configuration.queryObserver = { [self] in record($0) }
    }
}

/// A fresh database with the given tables created, and a log of the statements sent.
func withTables<T>(
    _ ddl: String..., pool: PoolOptions = PoolOptions(maxConnections: 4),
    configure: (inout PostgresService.Configuration) -> Void = { _ in },
    _ body: (PostgresService, StatementLog) async throws -> T
) async throws -> T {
    let log = StatementLog()
    return try await TestPostgres.withDatabase(
        pool: pool,
        configure: { configuration in
            log.attach(to: &configuration)
            configure(&configuration)
        }
    ) { service in
        for statement in ddl { try await service.execute(unsafeSQL: statement) }
        log.reset()
        return try await body(service, log)
    }
}

/// Counts rows with plain SQL, independent of the library's fetch.
func rowCount(_ table: String, _ service: PostgresService) async throws -> Int {
    let rows = try await service.query("SELECT count(*) FROM \(unescaped: table)")
    return Int(try rows[0].decode(Int64.self))
}

/// A date rounded to whole microseconds, as PostgreSQL keeps it.
func microseconds(_ date: Date) -> Int64 {
    Int64(((date.timeIntervalSince1970 - 946_684_800) * 1_000_000).rounded())
}

/// Captures log messages and their metadata.
final class CapturedLogs: Sendable {
    let lines = Mutex<[String]>([])

    func makeLogger() -> Logger {
        var logger = Logger(label: "test") { _ in CapturingHandler(sink: self) }
        logger.logLevel = .debug
        return logger
    }
}

struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        sink.lines.withLock { $0.append("\(event.message) \(merged)") }
    }
}

/// Runs `work` on a thread of its own: a server restart takes a second, which the two-thread task pool cannot spare.
func onThread(_ work: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
        Thread.detachNewThread { done.resume(with: Result { try work() }) }
    }
}
