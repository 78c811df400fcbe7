import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// A filter that cannot be compiled fails the verb that receives it, whatever its spelling: the call itself for the
/// verbs that return a value, the first step for `stream` and `observe` (which return a sequence). Nothing is sent.
@Suite(.serialized)
struct FilterFailureTests {
    /// Each spelling, broken, with a part of the message that names what is wrong.
    static let broken: [(spelling: String, filter: EntityFilter<BookEntity>, names: String)] = {
        typealias Broken = (spelling: String, filter: EntityFilter<BookEntity>, names: String)
        let predicate: EntityFilter<BookEntity> = .predicate(#Predicate<BookModel> { $0.price! * 2 > 3 })
        let keyPath: EntityFilter<BookEntity> = \BookEntity.titleLength == 3
        let built = EntityFilter<BookEntity>(Filter.isNull("nope") && Filter.constant(true))
        let spellings: [Broken] = [
            ("a malformed format string", .format("price <<< %@", 1.0), "price <<<"),
            ("a format string short of arguments", .format("price < %@ AND title == %@", 1.0), "placeholder %@ has no argument"),
            ("a format string from arrays", .format("title ==", arguments: []), "title =="),
            ("a #Predicate PostgreSQL cannot decide", predicate, "cannot be compiled to SQL"),
            ("a key path to a computed property", keyPath, "a computed property of BookEntity"),
            ("a key by name that is no column", .equal("nope", 1), "nope"),
            ("a Filter built elsewhere", built, "nope"),
        ]
        return spellings
    }()

    typealias Verb = (name: String, run: @Sendable (PostgresService, EntityFilter<BookEntity>) async throws -> Void)

    /// The verbs that return a value: the call fails.
    static let calls: [Verb] = [
        ("fetch", { _ = try await $0.fetch(BookModel.self, where: $1) }),
        ("fetchOne", { _ = try await $0.fetchOne(BookModel.self, where: $1) }),
        ("count", { _ = try await $0.count(BookModel.self, where: $1) }),
        ("exists", { _ = try await $0.exists(BookModel.self, where: $1) }),
        ("deleteAll", { _ = try await $0.deleteAll(BookModel.self, where: $1) }),
    ]

    @Test func eachSpellingFailsTheCallThatReceivesIt() async throws {
        try await withBookstore { service, log in
            for (spelling, filter, names) in Self.broken {
                for (verb, run) in Self.calls {
                    log.reset()
                    let error = await #expect(throws: StructPostgresError.self, "\(verb), \(spelling)") { try await run(service, filter) }
                    #expect(error?.message.contains(names) == true, "\(verb), \(spelling): \(error?.message ?? "no error")")
                    #expect(
                        log.all.filter { !$0.hasPrefix("SELECT") || $0.contains("books") }.isEmpty,
                        "\(verb), \(spelling): nothing was sent: \(log.all)")
                }
            }
        }
    }

    /// `stream` and `observe` return their sequence; its first step fails with the error the call would have thrown.
    @Test func eachSpellingFailsTheFirstStepOfAStreamAndAnObservation() async throws {
        try await withBookstore { service, _ in
            for (spelling, filter, names) in Self.broken {
                let fetchError = await #expect(throws: StructPostgresError.self) { try await service.fetch(BookModel.self, where: filter) }
                let stream = service.stream(BookModel.self, where: filter)
                let streamError = await #expect(throws: StructPostgresError.self, "stream, \(spelling)") {
                    try await Self.first(of: stream)
                }
                let observation = service.observe(BookModel.self, where: filter)
                let observeError = await #expect(throws: StructPostgresError.self, "observe, \(spelling)") {
                    try await Self.first(of: observation)
                }
                for error in [streamError, observeError] {
                    #expect(error?.code == fetchError?.code, "\(spelling): \(String(describing: error))")
                    #expect(error?.message.contains(names) == true, "\(spelling): \(error?.message ?? "no error")")
                }
            }
        }
    }

    private static func first(of stream: ModelStream<BookModel>) async throws {
        for try await _ in stream { break }
    }

    private static func first(of observation: ModelObservation<BookModel>) async throws {
        for try await _ in observation { break }
    }
}

extension BookEntity {
    /// Computed: no column holds it.
    fileprivate var titleLength: Int { title?.count ?? 0 }
}
