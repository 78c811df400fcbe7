@testable import Bookstore
import BookstoreModels
import CoreMetrics
import Foundation
import InMemoryTracing
import MetricsTestKit
import StructPostgres
import Synchronization
import Testing
import Tracing

/// Spans and metrics from the one path every operation takes, to an in-memory tracer and swift-metrics' test kit
/// given to the service (so that tests running at once do not see each other's).
@Suite struct ObservabilityTests {
    private func observed(
        _ ddl: String..., pool: PoolOptions = PoolOptions(maxConnections: 4),
        _ body: (PostgresService, InMemoryTracer, TestMetrics) async throws -> Void
    ) async throws {
        let tracer = InMemoryTracer()
        let metrics = TestMetrics()
        try await withTables(
            pool: pool,
            configure: { configuration in
                configuration.tracer = tracer
                configuration.metricsFactory = metrics
            }
        ) { service, _ in
            for statement in ddl { try await service.execute(unsafeSQL: statement) }
            tracer.clearAll()
            try await body(service, tracer, metrics)
        }
    }

    private func string(_ span: FinishedInMemorySpan, _ key: String) -> String? {
        if case .string(let value)? = span.attributes.get(key) { return value }
        return nil
    }

    @Test func eachCoalescedCallIsAnOperationAndItsBatchsStatementIsTracedUnderOneOfThem() async throws {
        try await observed(BookSchema.create) { service, tracer, _ in
            let novels = (0..<40).map { Novel(uuid: UUID(), title: "N\($0)", price: 1, publisher: nil) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for novel in novels { group.addTask { try await service.update(entities: [novel], options: .upsert.coalesced()) } }
                try await group.waitForAll()
            }
            let spans = tracer.finishedSpans
            let calls = spans.filter { $0.operationName == "upsert books" }
            #expect(calls.count == 40)
            let statements = spans.filter { $0.operationName == "INSERT" || $0.operationName == "WITH" }
            #expect(!statements.isEmpty && statements.count < 40, "\(statements.count) statements")
            let callIDs = Set(calls.map(\.spanID))
            #expect(statements.allSatisfy { $0.parentSpanID.map(callIDs.contains) == true })
        }
    }

    @Test func anOperationIsAClientSpanWithAStatementSpanInside() async throws {
        try await observed(BookSchema.create) { service, tracer, metrics in
            let novel = Novel(uuid: UUID(), title: "Dune", price: 9, publisher: nil)
            try await service.update(entities: [novel])
            tracer.clearAll()
            _ = try await service.fetch(Novel.self, where: .equal("title", "Dune"))
            let spans = tracer.finishedSpans
            let fetch = try #require(spans.first { $0.operationName == "fetch books" }, "\(spans.map(\.operationName))")
            #expect(fetch.kind == .client)
            #expect(string(fetch, "db.system.name") == "postgresql")
            #expect(string(fetch, "db.collection.name") == "books")
            #expect(string(fetch, "db.operation.name") == "fetch")
            #expect(string(fetch, "db.namespace") == service.configuration.connection.database)
            #expect(string(fetch, "server.address") == service.configuration.connection.host)
            #expect(fetch.attributes.get("server.port") == .int64(Int64(service.configuration.connection.port)))
            let select = try #require(spans.first { $0.operationName == "SELECT" })
            #expect(select.parentSpanID == fetch.spanID)
            #expect(select.traceID == fetch.traceID)
            #expect(
                string(select, "db.query.text")?.contains(#"FROM "books" WHERE "books"."title" = $1"#) == true,
                "\(String(describing: string(select, "db.query.text")))")
            let durations = metrics.timers.filter { $0.label == "db.client.operation.duration" }
            #expect(
                durations.contains { timer in
                    timer.dimensions.contains { $0 == ("db.operation.name", "fetch") }
                        && timer.dimensions.contains { $0 == ("db.collection.name", "books") }
                })
            let read = metrics.counters.filter { $0.label == "structpg.rows" && $0.dimensions.contains { $0 == ("direction", "read") } }
            #expect(read.reduce(0) { $0 + $1.totalValue } == 1)
        }
    }

    /// One span for the write, a child per statement: the transaction, one upsert per table, the join-table sets.
    @Test func aGraphWriteHasAChildSpanPerStatement() async throws {
        let tracer = InMemoryTracer()
        try await withTables(configure: { $0.tracer = tracer }) { service, _ in
            _ = try await Migrator(service: service, migrations: try MigrationSet(directory: repositoryMigrations)).migrate()
            #expect(tracer.finishedSpans.contains { $0.operationName == "migrate" })
            try await service.update(entities: makeGraph(stores: 1, booksPerStore: 2, reviewsPerBook: 1, authors: 1))  // reads the catalog
            tracer.clearAll()
            try await service.update(entities: makeGraph(stores: 2, booksPerStore: 2, reviewsPerBook: 1, authors: 1))
            let spans = tracer.finishedSpans
            let write = try #require(spans.first { $0.operationName == "upsert stores" }, "\(spans.map(\.operationName))")
            #expect(write.attributes.get("db.operation.batch.size") == .int64(2))
            let children = spans.filter { $0.parentSpanID == write.spanID }
            // BEGIN, one upsert per table (authors, books, reviews, stores), the store_books sets; COMMIT is not a statement span.
            #expect(children.first?.operationName == "BEGIN")
            #expect(children.count == 6, "\(children.map(\.operationName))")
            let texts = children.compactMap { string($0, "db.query.text") }
            for table in ["stores", "books", "authors", "reviews", "store_books"] {
                #expect(texts.contains { $0.contains("\"\(table)\"") }, "a statement for \(table)")
            }
        }
    }

    /// Hand-written SQL spells its values out: a span's `db.query.text`, a debug log line and an error's SQL show
    /// them masked (numbers as `?`), unless `logBoundValues` is on (for logs and errors; spans stay masked).
    @Test(arguments: [false, true])
    func literalsOfHandWrittenSQLReachNeitherSpansNorLogs(logBoundValues: Bool) async throws {
        let tracer = InMemoryTracer()
        let logs = CapturedLogs()
        try await withTables(
            "CREATE TABLE counters (n bigint, label text)",
            configure: { configuration in
                configuration.tracer = tracer
                configuration.logger = logs.makeLogger()
                configuration.logBoundValues = logBoundValues
            }
        ) { service, _ in
            try await service.execute(unsafeSQL: "INSERT INTO counters VALUES (471108152343, 'secret-label')")
            logs.lines.withLock { $0.removeAll() }
            tracer.clearAll()
            try await service.execute(unsafeSQL: "UPDATE counters SET n = 471108152342 WHERE n = 471108152343")
            let rows = try await service.query("SELECT n FROM counters WHERE n = 471108152342 AND label = 'secret-label'")
            #expect(try rows.map { try $0.decode(Int64.self) } == [471_108_152_342])
            let failure = await #expect(throws: StructPostgresError.self) {
                try await service.execute(unsafeSQL: "UPDATE counters SET n = 471108152344 / 0")
            }

            let texts = tracer.finishedSpans.compactMap { string($0, "db.query.text") }
            #expect(texts.contains("UPDATE counters SET n = ? WHERE n = ?"), "\(texts)")
            #expect(texts.contains("SELECT n FROM counters WHERE n = ? AND label = '****'"), "\(texts)")
            #expect(texts.count == 3, "\(texts)")
            for text in texts {
                #expect(!text.contains("47110815234") && !text.contains("secret-label"), "\(text)")
            }
            let lines = logs.lines.withLock { $0 }.filter { $0.hasPrefix("query [") }
            let failedSQL = failure?.sql ?? ""
            if logBoundValues {
                #expect(lines.contains { $0.contains("WHERE n = 471108152343") }, "\(lines)")
                #expect(lines.contains { $0.contains("WHERE n = 471108152342 AND label = 'secret-label'") }, "\(lines)")
                #expect(failedSQL == "UPDATE counters SET n = 471108152344 / 0")
            } else {
                #expect(lines.contains { $0.contains("UPDATE counters SET n = ? WHERE n = ?") }, "\(lines)")
                #expect(lines.contains { $0.contains("SELECT n FROM counters WHERE n = ? AND label = '****'") }, "\(lines)")
                let logged = logs.lines.withLock { $0.joined(separator: "\n") }
                #expect(!logged.contains("47110815234") && !logged.contains("secret-label"), "\(logged)")
                #expect(failedSQL == "UPDATE counters SET n = ? / ?")
            }
        }
    }

    @Test func aFailedStatementCarriesItsSQLStateAndErrorType() async throws {
        try await observed("CREATE TABLE tags (uuid uuid PRIMARY KEY, name text NOT NULL UNIQUE)") { service, tracer, metrics in
            _ = try await service.query("INSERT INTO tags VALUES (gen_random_uuid(), 'x')")
            tracer.clearAll()
            await #expect(throws: StructPostgresError.self) {
                _ = try await service.query("INSERT INTO tags VALUES (gen_random_uuid(), 'x')")
            }
            let spans = tracer.finishedSpans
            let query = try #require(spans.first { $0.operationName == "query" })
            let insert = try #require(spans.first { $0.operationName == "INSERT" })
            for span in [query, insert] {
                #expect(string(span, "db.response.status_code") == "23505")
                #expect(string(span, "error.type") == "uniqueViolation")
                #expect(span.status?.code == .error)
            }
            let errors = metrics.counters.filter { $0.label == "structpg.errors" }
            #expect(errors.contains { $0.dimensions.contains { $0 == ("db.response.status_code", "23505") } && $0.totalValue == 1 })
        }
    }

    @Test func aRetriedTransactionRecordsAnEvent() async throws {
        try await observed(BookSchema.create) { service, tracer, _ in
            let book = Novel(uuid: UUID(), title: "contended", price: 0, publisher: nil)
            try await service.update(entities: [book])
            let attempts = Mutex(0)
            try await service.transaction(.init(isolation: .repeatableRead)) { tx in
                let attempt = attempts.withLock {
                    $0 += 1; return $0
                }
                var current = try await tx.fetch(Novel.self, where: .equal("uuid", book.uuid))[0]
                if attempt == 1 {
                    var concurrent = current
                    concurrent.price = 100
                    try await service.update(entities: [concurrent])
                }
                current.title = "attempt \(attempt)"
                try await tx.update(entities: [current])
            }
            let transaction = try #require(tracer.finishedSpans.first { $0.operationName == "transaction" })
            let retried = transaction.events.filter { $0.name == "transaction retried" }
            #expect(retried.count == 1)
            #expect(retried.first?.attributes.get("db.response.status_code") == .string("40001"))
        }
    }

    @Test func waitingForAConnectionIsMeasured() async throws {
        try await observed(BookSchema.create, pool: PoolOptions(maxConnections: 1, keepIdleConnectionsFor: .zero)) {
            service, tracer, metrics in
            let (holding, signal) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await service.withConnection { _ in
                    signal.yield()
                    try await Task.sleep(for: .milliseconds(300))
                }
            }
            for await _ in holding { break }
            tracer.clearAll()
            #expect(try await service.count(Novel.self) == 0)
            try await holder.value
            let waits = metrics.timers.filter { $0.label == "db.client.connection.wait_time" }.flatMap(\.values)
            #expect(waits.contains { $0 >= 100_000_000 }, "a wait of at least 100 ms: \(waits)")
            let pending = metrics.recorders.filter { $0.label == "db.client.connection.pending_requests" }.flatMap(\.values)
            #expect(pending.contains(1))
            #expect(metrics.recorders.first { $0.label == "db.client.connection.max" }?.lastValue == 1)
            let count = try #require(tracer.finishedSpans.first { $0.operationName == "count books" })
            #expect(count.events.contains { $0.name == "waited for a connection" })
        }
    }

    /// Without a tracer or metrics backend in the configuration, the ones active for the calling task are used:
    /// bound with `withTracer` and `withMetricsFactory` (as a bootstrapped one would be), looked up per operation.
    @Test func aTracerAndMetricsBoundToTheTaskRecordTheOperation() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let tracer = InMemoryTracer()
            let metrics = TestMetrics()
            try await withTracer(tracer) {
                try await withMetricsFactory(metrics) {
                    try await service.update(entities: [Novel(uuid: UUID(), title: "Dune", price: 9, publisher: nil)])
                    _ = try await service.fetch(Novel.self)
                }
            }
            let names = tracer.finishedSpans.map(\.operationName)
            #expect(names.contains("upsert books") && names.contains("fetch books") && names.contains("SELECT"), "\(names)")
            let rows = metrics.counters.filter { $0.label == "structpg.rows" }
            #expect(rows.first { $0.dimensions.contains { $0 == ("direction", "written") } }?.totalValue == 1)
            #expect(rows.first { $0.dimensions.contains { $0 == ("direction", "read") } }?.totalValue == 1)
            #expect(metrics.recorders.contains { $0.label == "db.client.connection.count" })
            let spansBefore = tracer.finishedSpans.count
            _ = try await service.count(Novel.self)
            #expect(tracer.finishedSpans.count == spansBefore, "outside withTracer, nothing is traced")
        }
    }

    /// A no-op tracer in the configuration turns tracing off for the service, whatever the task has bound.
    @Test func aConfiguredNoOpTracerTurnsTracingOff() async throws {
        try await withTables(BookSchema.create, configure: { $0.tracer = NoOpTracer() }) { service, _ in
            let tracer = InMemoryTracer()
            try await withTracer(tracer) {
                try await service.update(entities: [Novel(uuid: UUID(), title: "Dune", price: 9, publisher: nil)])
                #expect(try await service.count(Novel.self) == 1)
            }
            #expect(tracer.finishedSpans.isEmpty, "\(tracer.finishedSpans.map(\.operationName))")
        }
    }

    /// Neither bound values nor the password reach a span attribute, an event or a metric label.
    /// Against a server reached without a password (trust authentication, as many CI services and local installs
    /// have), the test connects as a role of its own that has one.
    @Test func noBoundValueOrPasswordInSpansOrMetrics() async throws {
        try await observed(BookSchema.create) { service, tracer, metrics in
            guard service.configuration.connection.password == nil else {
                return try await expectNoSecret(service, tracer, metrics)
            }
            let role = "observed_\(UUID().uuidString.prefix(8).lowercased())"
            let password = "pw-\(UUID().uuidString)"
            try await service.execute(
                unsafeSQL: "CREATE ROLE \(role) LOGIN PASSWORD '\(password)'; GRANT ALL ON ALL TABLES IN SCHEMA public TO \(role);")
            var configuration = service.configuration
            configuration.connection.user = role
            configuration.connection.password = password
            do {
                try await PostgresService.withService(configuration: configuration) { own in
                    tracer.clearAll()
                    try await expectNoSecret(own, tracer, metrics)
                }
            } catch {
                try? await service.execute(unsafeSQL: "DROP OWNED BY \(role); DROP ROLE \(role);")
                throw error
            }
            try await service.execute(unsafeSQL: "DROP OWNED BY \(role); DROP ROLE \(role);")
        }
    }

    private func expectNoSecret(_ service: PostgresService, _ tracer: InMemoryTracer, _ metrics: TestMetrics) async throws {
        let secret = "s3cr3t-\(UUID().uuidString)"
        try await service.update(entities: [Novel(uuid: UUID(), title: secret, price: 1, publisher: secret)])
        _ = try await service.fetch(Novel.self, where: .format("title == %@ OR publisher BEGINSWITH %@", secret, secret))
        _ = try await service.query("SELECT \(secret)::text")
        await #expect(throws: StructPostgresError.self) { _ = try await service.query("SELECT \(secret)::int") }
        let password = try #require(service.configuration.connection.password)
        var texts: [String] = []
        for span in tracer.finishedSpans {
            texts.append(span.operationName)
            span.attributes.forEach { key, value in texts.append("\(key)=\(value)") }
            for event in span.events {
                texts.append(event.name)
                event.attributes.forEach { key, value in texts.append("\(key)=\(value)") }
            }
        }
        for metric in metrics.counters.map(\.dimensions) + metrics.timers.map(\.dimensions) + metrics.recorders.map(\.dimensions) {
            texts += metric.map { "\($0.0)=\($0.1)" }
        }
        #expect(!texts.isEmpty)
        #expect(!texts.contains { $0.contains(secret) })
        #expect(!texts.contains { $0.contains(password) })
    }

    /// A stream outside a transaction is one operation: its span lasts while the stream is iterated and carries the
    /// rows read; its statements (BEGIN, DECLARE) are inside it.
    @Test func aStreamsSpanLastsWhileItIsIteratedAndCountsItsRows() async throws {
        try await observed(BookSchema.create) { (service: PostgresService, tracer: InMemoryTracer, metrics: TestMetrics) async throws in
            try await service.update(entities: (0..<600).map { Novel(uuid: UUID(), title: "N\($0)", price: 1, publisher: nil) })
            tracer.clearAll()
            let started = ContinuousClock.now
            let count = try await Self.read(service.stream(Novel.self), pausingAfter: 300)
            #expect(count == 600)
            let iterated = ContinuousClock.now - started
            let spans = tracer.finishedSpans
            let stream = try #require(spans.first { $0.operationName == "stream books" }, "\(spans.map(\.operationName))")
            let end: UInt64 = stream.endInstant.nanosecondsSinceEpoch
            let start: UInt64 = stream.startInstant.nanosecondsSinceEpoch
            let lasted = Duration.nanoseconds(Int64(end - start))
            #expect(lasted >= .milliseconds(200) && lasted <= iterated, "the span lasted \(lasted), the iteration \(iterated)")
            let returned: SpanAttribute? = stream.attributes.get("db.response.returned_rows")
            #expect(returned == .int64(600), "\(stream.attributes)")
            let inside = spans.filter { $0.parentSpanID == stream.spanID }.map(\.operationName)
            #expect(inside.contains("BEGIN") && inside.contains("DECLARE"), "\(inside)")
            let read = metrics.counters.first { $0.label == "structpg.rows" && $0.dimensions.contains { $0 == ("direction", "read") } }
            #expect(read?.totalValue == 600)
        }
    }

    /// Reads `stream` (at most `upTo` models), pausing 200 ms after `pausingAfter`; returns how many it read.
    private static func read(_ stream: ModelStream<Novel>, pausingAfter pause: Int = -1, upTo limit: Int = .max) async throws -> Int {
        var rows = stream.makeAsyncIterator()
        var count = 0
        while count < limit, try await rows.next() != nil {
            count += 1
            if count == pause { try await Task.sleep(for: .milliseconds(200)) }
        }
        return count
    }

    /// A stream dropped before its end ends its span, with the rows read until then.
    @Test func aStreamThatIsAbandonedEndsItsSpan() async throws {
        try await observed(BookSchema.create) { (service: PostgresService, tracer: InMemoryTracer, _: TestMetrics) async throws in
            try await service.update(entities: (0..<50).map { Novel(uuid: UUID(), title: "N\($0)", price: 1, publisher: nil) })
            tracer.clearAll()
            _ = try await Self.read(service.stream(Novel.self), upTo: 2)
            let stream = try #require(tracer.finishedSpans.first { $0.operationName == "stream books" })
            let returned: SpanAttribute? = stream.attributes.get("db.response.returned_rows")
            #expect(returned == .int64(2))
        }
    }

    /// A tracer bound with `withTracer` (none configured) sees every statement of a coalesced batch, as a configured
    /// one does: the batch is written with the instruments of the call that sent it.
    @Test func aTaskBoundTracerSeesTheStatementsOfCoalescedBatches() async throws {
        try await withTables(BookSchema.create, configure: { $0.coalescing = WriteCoalescing() }) { service, log in
            let tracer = InMemoryTracer()
            try await withTracer(tracer) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<40 {
                        group.addTask {
                            try await service.update(entities: [Novel(uuid: UUID(), title: "N\(index)", price: 1, publisher: nil)])
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let sent = log.all.filter { $0.hasPrefix("INSERT") || $0.hasPrefix("WITH") }.count
            let traced = tracer.finishedSpans.filter { $0.operationName == "INSERT" || $0.operationName == "WITH" }.count
            #expect(sent > 0 && traced == sent, "\(traced) statement spans for \(sent) statements sent")
        }
    }

    /// The library's own look-ups record nothing: observing records the fetches it makes, and no other fetch.
    @Test func observingRecordsOnlyTheFetchesItMakes() async throws {
        try await observed(BookSchema.create) { (service: PostgresService, tracer: InMemoryTracer, metrics: TestMetrics) async throws in
            try await service.execute(unsafeSQL: ChangeNotifications.installSQL(tables: ["books"], keys: false))
            var iterator = service.observe(Novel.self).makeAsyncIterator()
            _ = try await iterator.next()
            for _ in 0..<500 where !tracer.finishedSpans.contains(where: { $0.operationName == "fetch books" }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let fetches = tracer.finishedSpans.filter { $0.operationName == "fetch books" }
            #expect(fetches.count == 1, "\(tracer.finishedSpans.map(\.operationName))")
            let timers = metrics.timers.filter {
                $0.label == "db.client.operation.duration" && $0.dimensions.contains { $0 == ("db.operation.name", "fetch") }
            }
            #expect(timers.map { $0.values.count }.reduce(0, +) == 1)
            #expect(!tracer.finishedSpans.contains { $0.operationName.hasPrefix("lookup") })
        }
    }
}
