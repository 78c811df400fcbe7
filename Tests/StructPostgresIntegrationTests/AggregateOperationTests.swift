@testable import Bookstore
import BookstoreModels
import Foundation
import InMemoryTracing
import MetricsTestKit
import StructPostgres
import Synchronization
import Testing

/// Figures and pages are operations like the others: a span and metrics each, and live on a dashboard through
/// `observe(changesOf:read:)`.
@Suite struct AggregateOperationTests {
    @Test func aFigureIsAnOperationWithItsSpanAndMetrics() async throws {
        let tracer = InMemoryTracer()
        let metrics = TestMetrics()
        try await withTables(
            BookSchema.create,
            configure: { configuration in
                configuration.tracer = tracer
                configuration.metricsFactory = metrics
            }
        ) { service, _ in
            try await service.update(
                entities: (0..<5).map { Novel(uuid: UUID(), title: "N\($0)", price: Double($0), publisher: $0 < 2 ? "P" : nil) })
            tracer.clearAll()
            #expect(try await service.average(\NovelEntity.price, of: Novel.self) == 2)
            _ = try await service.groups(of: Novel.self, by: \.publisher, .count)
            _ = try await service.fetch(Novel.self, sortedBy: [.ascending("title")], pageSize: 2)
            let spans = tracer.finishedSpans
            let aggregates = spans.filter { $0.operationName == "aggregate books" }
            #expect(aggregates.count == 2, "\(spans.map(\.operationName))")
            #expect(aggregates.allSatisfy { $0.kind == .client && $0.attributes.get("db.operation.name") == .string("aggregate") })
            let select = try #require(spans.first { $0.operationName == "SELECT" && $0.parentSpanID == aggregates[0].spanID })
            guard case .string(let text)? = select.attributes.get("db.query.text") else { Issue.record("no query text"); return }
            #expect(
                text.hasPrefix(#"SELECT (sum("books"."price"::float8) / nullif(count("books"."price"), "#)
                    && text.hasSuffix(#") AS "averagePrice" FROM "books""#), "\(text)")
            #expect(spans.contains { $0.operationName == "fetch books" })
            let durations = metrics.timers.filter { timer in
                timer.label == "db.client.operation.duration" && timer.dimensions.contains { $0 == ("db.operation.name", "aggregate") }
            }
            #expect(!durations.isEmpty)
            let read = metrics.counters.filter { $0.label == "structpg.rows" && $0.dimensions.contains { $0 == ("direction", "read") } }
            // Two groups (publisher P and none) and a page of two.
            #expect(read.reduce(0) { $0 + $1.totalValue } == 4)
        }
    }

    @Test func aDashboardFigureFollowsEveryCommittedChange() async throws {
        try await withBookstore { service, _ in
            try await service.installChangeNotifications(on: ["reviews"])
            let book = BookModel(uuid: UUID(), title: "Dune", price: 9, reviews: [])
            try await service.update(entities: [book])
            let seen = Lines()
            let observer = Task {
                for try await (count, rating) in service.observe(
                    changesOf: ReviewModel.self,
                    read: { db in
                        try await db.aggregate(of: ReviewModel.self, .count, .average(\.stars), where: \.bookID == book.uuid)
                    })
                {
                    seen.all.withLock { $0.append("\(count) \(rating.map { String($0) } ?? "-")") }
                }
            }
            defer { observer.cancel() }
            func waitFor(_ line: String) async throws {
                let deadline = ContinuousClock.now + .seconds(60)
                while !seen.all.withLock({ $0.contains(line) }) {
                    guard ContinuousClock.now < deadline else { Issue.record("never saw \(line): \(seen.all.withLock { $0 })"); return }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            try await waitFor("0 -")
            let five = ReviewModel(uuid: UUID(), bookID: book.uuid, content: "Yes", stars: 5, createdAt: .now)
            try await service.update(entities: [five])
            try await waitFor("1 5.0")
            try await service.update(entities: [ReviewModel(uuid: UUID(), bookID: book.uuid, content: "Meh", stars: 2, createdAt: .now)])
            try await waitFor("2 3.5")
            try await service.delete(entities: [five])
            try await waitFor("1 2.0")
            // A model whose table has no triggers is refused by name at the first step.
            let refused = await #expect(throws: StructPostgresError.self) {
                for try await _ in service.observe(changesOf: AuthorModel.self, read: { try await $0.count(AuthorModel.self) }) { break }
            }
            #expect(refused?.code == .invalidConfiguration && refused?.table == "authors")
        }
    }
}

/// What an observer saw, line by line.
private final class Lines: Sendable {
    let all = Mutex<[String]>([])
}
