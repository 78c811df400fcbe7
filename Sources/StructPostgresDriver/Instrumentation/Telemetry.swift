import CoreMetrics
import Foundation
import Synchronization
import Tracing
import StructPostgresCore

/// Spans and metrics of one service, started on the one path every operation takes (``OperationPath``) and for
/// every statement (``DatabaseSession``). With no tracer and no metrics backend bootstrapped (nor configured),
/// an operation checks two flags and does nothing else.
///
/// Spans follow OpenTelemetry's database conventions: `{operation} {table}`, `db.system.name`, `db.namespace`,
/// `db.collection.name`, `db.operation.name`, `db.query.text` (parameterized SQL, never bound values, literals masked),
/// `db.operation.batch.size`, `db.response.status_code` (the SQLSTATE), `error.type`, `server.address`,
/// `server.port`.
package final class Telemetry: Sendable {
    /// The configuration's tracer and metrics backend (`nil` for a no-op one), and whether none was configured:
    /// then the bootstrapped ones are used.
    private let configuredTracer: (any Tracer)?
    private let configuredMetrics: (any MetricsFactory)?
    private let tracesGlobally: Bool
    private let measuresGlobally: Bool
    let tracesQueryText: Bool
    private let namespace: String
    private let serverAddress: String
    private let serverPort: Int

    package init(configuration: PostgresConfiguration) {
        configuredTracer = configuration.tracer.flatMap { $0 is NoOpTracer ? nil : $0 }
        configuredMetrics = configuration.metricsFactory.flatMap { $0 is NOOPMetricsHandler ? nil : $0 }
        tracesGlobally = configuration.tracer == nil
        measuresGlobally = configuration.metricsFactory == nil
        tracesQueryText = configuration.tracesQueryText
        namespace = configuration.connection.database
        serverAddress = configuration.connection.host
        serverPort = configuration.connection.port
    }

    /// The tracer to use, or `nil` when spans would go nowhere. Nothing bootstrapped (the common case) is told by
    /// one cast of the active instrument, without the protocol lookups of `InstrumentationSystem.tracer`.
    var tracer: (any Tracer)? {
        guard tracesGlobally else { return configuredTracer }
        if type(of: InstrumentationSystem.instrument) == NoOpInstrument.self { return nil }
        let tracer = InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// The metrics backend to use, or `nil` when none records anything.
    package var metrics: (any MetricsFactory)? {
        guard measuresGlobally else { return configuredMetrics }
        let factory = MetricsSystem.factory
        return type(of: factory) == NOOPMetricsHandler.self ? nil : factory
    }

    /// Runs `body` as `operation`: a client span around it, and its duration, rows and errors recorded. The tracer
    /// and metrics backend are looked up once, here: `body` gets them for whatever else the operation records.
    package func measure<T>(_ operation: Operation, _ body: (OperationSpan) async throws -> T) async throws -> T {
        guard operation.kind != .lookup else {
            return try await InstrumentationContext.$current.withValue(nil) { try await body(OperationSpan(span: nil, metrics: nil)) }
        }
        let tracer = self.tracer
        let metrics = self.metrics
        guard tracer != nil || metrics != nil else { return try await body(OperationSpan(span: nil, metrics: nil)) }
        let start = ContinuousClock.now
        let span = tracer.map { startSpan($0, operation) }
        let measured = OperationSpan(span: span, metrics: metrics)
        do {
            let result: T
            if let span {
                result = try await InstrumentationContext.$current.withValue(span.context) { try await body(measured) }
                span.end()
            } else {
                result = try await body(measured)
            }
            if let metrics {
                record(operation, since: start, error: nil, metrics)
                if let direction = operation.countsRows, let rows = (result as? any RowCounting)?.rowsCounted {
                    countRows(rows, direction, table: operation.table, metrics)
                }
            }
            return result
        } catch {
            let failure = StructPostgresError.from(error, sql: nil)
            if let span {
                describe(failure, on: span)
                span.end()
            }
            if let metrics { record(operation, since: start, error: failure, metrics) }
            throw error
        }
    }

    fileprivate func startSpan(_ tracer: any Tracer, _ operation: Operation) -> any Span {
        let table = operation.table
        let name = table.map { "\(operation.kind.rawValue) \($0)" } ?? operation.kind.rawValue
        let span = tracer.startSpan(name, context: InstrumentationContext.current ?? .topLevel, ofKind: .client)
        if span.isRecording {
            var attributes = commonAttributes
            attributes["db.operation.name"] = operation.kind.rawValue
            if let table { attributes["db.collection.name"] = table }
            if let rows = operation.rows, rows > 1 { attributes["db.operation.batch.size"] = rows }
            span.attributes.merge(attributes)
        }
        return span
    }

    /// Starts `operation` for work that outlives one call (a stream's iteration), ended by
    /// ``RunningOperation/end(rows:error:)``; `nil` when nothing would record it.
    package func begin(_ operation: Operation) -> RunningOperation? {
        let tracer = self.tracer
        let metrics = self.metrics
        guard tracer != nil || metrics != nil else { return nil }
        return RunningOperation(telemetry: self, operation: operation, span: tracer.map { startSpan($0, operation) }, metrics: metrics)
    }

    /// The current task's trace context and tracer (when none is configured: one bound with `withTracer` counts),
    /// for work another task does on its behalf, such as a coalesced batch.
    package func inherited() -> InheritedInstruments {
        InheritedInstruments(context: InstrumentationContext.current, tracer: tracesGlobally ? tracer : nil)
    }

    /// A child span of the current operation for one statement: `SELECT`, `INSERT`..., with its parameterized SQL.
    func measureStatement<T>(_ sql: String, _ body: () async throws -> T) async throws -> T {
        guard InstrumentationContext.current != nil, let tracer else { return try await body() }
        let keyword = sql.prefix { !$0.isWhitespace }.uppercased()
        let span = tracer.startSpan(keyword, context: InstrumentationContext.current ?? .topLevel, ofKind: .client)
        if span.isRecording {
            var attributes = commonAttributes
            attributes["db.operation.name"] = keyword
            // SQL written by hand (`unsafeSQL`, migrations) may hold literals: masked (numbers as `?`), as OpenTelemetry asks.
            if tracesQueryText { attributes["db.query.text"] = maskingLiterals(sql) }
            span.attributes.merge(attributes)
        }
        do {
            let result = try await InstrumentationContext.$current.withValue(span.context) { try await body() }
            span.end()
            return result
        } catch {
            describe(StructPostgresError.from(error, sql: nil), on: span)
            span.end()
            throw error
        }
    }

    private var commonAttributes: SpanAttributes {
        var attributes = SpanAttributes()
        attributes["db.system.name"] = "postgresql"
        attributes["db.namespace"] = namespace
        attributes["server.address"] = serverAddress
        attributes["server.port"] = serverPort
        return attributes
    }

    /// The error's kind and SQLSTATE, never its message: a server's message may quote values.
    fileprivate func describe(_ error: StructPostgresError, on span: any Span) {
        var attributes = SpanAttributes()
        attributes["error.type"] = error.code.description
        if let state = error.sqlState { attributes["db.response.status_code"] = state }
        span.attributes.merge(attributes)
        span.setStatus(SpanStatus(code: .error))
        span.addEvent(SpanEvent(name: "exception", attributes: ["exception.type": .string(error.code.description)]))
    }

    fileprivate func record(
        _ operation: Operation, since start: ContinuousClock.Instant, error: StructPostgresError?, _ factory: any MetricsFactory
    ) {
        var dimensions = [("db.system.name", "postgresql"), ("db.operation.name", operation.kind.rawValue)]
        if let table = operation.table { dimensions.append(("db.collection.name", table)) }
        if let error { dimensions.append(("error.type", error.code.description)) }
        Timer(label: "db.client.operation.duration", dimensions: dimensions, factory: factory)
            .recordNanoseconds((ContinuousClock.now - start).nanoseconds)
        if let error {
            var errorDimensions = [("db.system.name", "postgresql"), ("error.type", error.code.description)]
            if let state = error.sqlState { errorDimensions.append(("db.response.status_code", state)) }
            Counter(label: "structpg.errors", dimensions: errorDimensions, factory: factory).increment()
        }
    }

    /// The pool's use: `db.client.connection.count` (state `used` and `idle`), `.pending_requests` and `.max`.
    func recordPool(inUse: Int, idle: Int, waiting: Int, max: Int, _ metrics: any MetricsFactory) {
        let pool = [("db.system.name", "postgresql"), ("db.client.connection.pool.name", namespace)]
        Gauge(label: "db.client.connection.count", dimensions: pool + [("db.client.connection.state", "used")], factory: metrics).record(
            inUse)
        Gauge(label: "db.client.connection.count", dimensions: pool + [("db.client.connection.state", "idle")], factory: metrics).record(
            idle)
        Gauge(label: "db.client.connection.pending_requests", dimensions: pool, factory: metrics).record(waiting)
        Gauge(label: "db.client.connection.max", dimensions: pool, factory: metrics).record(max)
    }

    /// How long a caller waited for a free connection: `db.client.connection.wait_time`.
    func recordWait(_ waited: Duration) {
        guard let metrics else { return }
        Timer(
            label: "db.client.connection.wait_time",
            dimensions: [("db.system.name", "postgresql"), ("db.client.connection.pool.name", namespace)], factory: metrics
        )
        .recordNanoseconds(waited.nanoseconds)
    }

    /// Counts rows the operation read or wrote (`direction`: `read` or `written`).
    fileprivate func countRows(_ rows: Int, _ direction: Operation.RowDirection, table: String?, _ metrics: any MetricsFactory) {
        guard rows > 0 else { return }
        var dimensions = [("db.system.name", "postgresql"), ("direction", direction.rawValue)]
        if let table { dimensions.append(("db.collection.name", table)) }
        Counter(label: "structpg.rows", dimensions: dimensions, factory: metrics).increment(by: rows)
    }
}

/// What one operation records to, looked up once by ``Telemetry/measure(_:_:)``: its span, when a tracer records
/// it, for what happens inside it (a retry, a wait for a connection); the metrics backend, when there is one.
package struct OperationSpan: Sendable {
    package let span: (any Span)?
    package let metrics: (any MetricsFactory)?

    package func event(_ name: String, _ attributes: SpanAttributes = [:]) {
        span?.addEvent(SpanEvent(name: name, attributes: attributes))
    }
}

/// A result whose rows an operation counts in `structpg.rows`.
package protocol RowCounting {
    var rowsCounted: Int { get }
}

extension Array: RowCounting {
    package var rowsCounted: Int { count }
}

extension Duration {
    package var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}

/// A task's trace context and tracer, carried to work done for it by another task.
package struct InheritedInstruments: Sendable {
    let context: InstrumentationContext?
    let tracer: (any Tracer)?

    /// Runs `body` with them bound, as in the task they were taken from.
    package func bound<T>(_ body: () async throws -> T) async throws -> T {
        try await InstrumentationContext.$current.withValue(context) {
            guard let tracer else { return try await body() }
            return try await withTracer(tracer) { try await body() }
        }
    }
}

/// An operation begun by ``Telemetry/begin(_:)``: its span and duration last until ``end(rows:error:)``, called once
/// (later calls do nothing).
package final class RunningOperation: Sendable {
    private let telemetry: Telemetry
    private let operation: Operation
    private let span: (any Span)?
    private let metrics: (any MetricsFactory)?
    private let start = ContinuousClock.now
    private let ended = Guarded(false)

    fileprivate init(telemetry: Telemetry, operation: Operation, span: (any Span)?, metrics: (any MetricsFactory)?) {
        self.telemetry = telemetry
        self.operation = operation
        self.span = span
        self.metrics = metrics
    }

    /// Runs `body` with the operation's span as the current trace context, for the statements it sends.
    package func bound<T>(_ body: () async throws -> T) async throws -> T {
        guard let span else { return try await body() }
        return try await InstrumentationContext.$current.withValue(span.context) { try await body() }
    }

    /// Ends the operation after `rows` rows: its span (with `db.response.returned_rows`, and the error's kind when it
    /// failed) and its metrics.
    package func end(rows: Int, error: (any Error)?) {
        guard
            ended.withLock({ ended in
                defer { ended = true }; return !ended
            })
        else { return }
        let failure = error.map { StructPostgresError.from($0, sql: nil) }
        if let span {
            span.attributes["db.response.returned_rows"] = rows
            if let failure { telemetry.describe(failure, on: span) }
            span.end()
        }
        if let metrics {
            telemetry.record(operation, since: start, error: failure, metrics)
            if let direction = operation.countsRows { telemetry.countRows(rows, direction, table: operation.table, metrics) }
        }
    }
}
