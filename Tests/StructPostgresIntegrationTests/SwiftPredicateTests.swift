@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// `#Predicate` against a real PostgreSQL: the same questions as format strings and typed key-path filters, the
/// same rows; values bound; what cannot be compiled refused by name.
@Suite struct SwiftPredicateTests {
    /// 3 stores x 4 books x 2 reviews; every third book has no publisher; the last book has no author.
    private func seed(_ service: PostgresService) async throws -> [BookModel] {
        var graph = makeGraph(stores: 3, booksPerStore: 4, reviewsPerBook: 2, authors: 2)
        graph[2].books![3].author = nil
        graph[1].books![2].title = "50% off_Sale"
        graph[0].books![1].reviews![0].content = "A GREAT read"
        try await service.update(entities: graph)
        return graph.flatMap { $0.books! }
    }

    private func uuids(_ models: [BookModel]) -> Set<UUID> { Set(models.map(\.uuid)) }

    @Test func theThreeSpellingsReturnTheSameRows() async throws {
        try await withBookstore { service, _ in
            let books = try await seed(service)
            let limit = 1.5
            let prefix = "Title 001"
            let ids = [books[1].uuid, books[5].uuid]
            let name = books[0].author!.name
            typealias Question = (String, Filter, Filter?, Predicate<BookModel>, (BookModel) -> Bool)
            let questions: [Question] = [
                (
                    "publisher == 'Pub'", try Filter(format: "publisher == 'Pub'"), (\BookEntity.publisher == "Pub").filter,
                    #Predicate<BookModel> { $0.publisher == "Pub" }, { $0.publisher == "Pub" }
                ),
                (
                    "publisher == nil", try Filter(format: "publisher == nil"), (\BookEntity.publisher == nil).filter,
                    #Predicate<BookModel> { $0.publisher == nil }, { $0.publisher == nil }
                ),
                (
                    "NOT publisher == 'Pub'", try Filter(format: "NOT (publisher == 'Pub')"), (!(\BookEntity.publisher == "Pub")).filter,
                    #Predicate<BookModel> { !($0.publisher == "Pub") }, { !($0.publisher == "Pub") }
                ),
                (
                    "price < limit OR price >= 3.5", try Filter(format: "price < %@ OR price >= 3.5", limit),
                    (\BookEntity.price < limit || \BookEntity.price >= 3.5).filter,
                    #Predicate<BookModel> { $0.price! < limit || $0.price! >= 3.5 }, { $0.price! < limit || $0.price! >= 3.5 }
                ),
                (
                    "5 > price", try Filter(format: "price < 5"), (\BookEntity.price < 5).filter,
                    #Predicate<BookModel> { 5 > $0.price! }, { 5 > $0.price! }
                ),
                (
                    "title BEGINSWITH prefix", try Filter(format: "title BEGINSWITH %@", prefix),
                    EntityFilter<BookEntity>.beginsWith(\.title, prefix).filter,
                    #Predicate<BookModel> { $0.title?.starts(with: prefix) ?? false }, { $0.title!.hasPrefix(prefix) }
                ),
                (
                    "title CONTAINS '% off_'", try Filter(format: "title CONTAINS '% off_'"),
                    EntityFilter<BookEntity>.contains(\.title, "% off_").filter,
                    #Predicate<BookModel> { $0.title?.contains("% off_") ?? false }, { $0.title!.contains("% off_") }
                ),
                (
                    "NOT title CONTAINS 'Sale' (nil counts)", try Filter(format: "NOT title CONTAINS 'Sale'"),
                    (!EntityFilter<BookEntity>.contains(\.title, "Sale")).filter,
                    #Predicate<BookModel> { !($0.title?.contains("Sale") ?? false) }, { !$0.title!.contains("Sale") }
                ),
                (
                    "publisher == nil OR publisher BEGINSWITH 'P'", try Filter(format: "publisher == nil OR publisher BEGINSWITH 'P'"),
                    (\BookEntity.publisher == nil || EntityFilter<BookEntity>.beginsWith(\.publisher, "P")).filter,
                    #Predicate<BookModel> { $0.publisher?.starts(with: "P") ?? true }, { $0.publisher?.hasPrefix("P") ?? true }
                ),
                (
                    "uuid IN ids", try Filter(format: "uuid IN %@", ids), EntityFilter<BookEntity>.in(\.uuid, ids).filter,
                    #Predicate<BookModel> { ids.contains($0.uuid) }, { ids.contains($0.uuid) }
                ),
                (
                    "author.name == name", try Filter(format: "author.name == %@", name), nil,
                    #Predicate<BookModel> { $0.author?.name == name }, { $0.author?.name == name }
                ),
                (
                    "author == nil", try Filter(format: "author.name == nil"), nil,
                    #Predicate<BookModel> { $0.author == nil }, { $0.author == nil }
                ),
                (
                    "ANY reviews.content CONTAINS 'GREAT'", try Filter(format: "ANY reviews.content CONTAINS 'GREAT'"), nil,
                    #Predicate<BookModel> { $0.reviews?.contains { $0.content?.contains("GREAT") ?? false } ?? false },
                    { $0.reviews!.contains { $0.content!.contains("GREAT") } }
                ),
                (
                    "ALL reviews.content BEGINSWITH 'review'", try Filter(format: "ALL reviews.content BEGINSWITH 'review'"), nil,
                    #Predicate<BookModel> { $0.reviews?.allSatisfy { $0.content?.starts(with: "review") ?? false } ?? true },
                    { $0.reviews!.allSatisfy { $0.content!.hasPrefix("review") } }
                ),
            ]
            for (question, format, typed, predicate, expected) in questions {
                let want = uuids(books.filter(expected))
                #expect(!want.isEmpty || question.contains("nil"), "\(question) should match some rows to mean something")
                let byFormat = try await service.fetch(BookModel.self, where: EntityFilter(format), loading: .none)
                let byPredicate = try await service.fetch(BookModel.self, where: .predicate(predicate), loading: .none)
                #expect(uuids(byFormat) == want, "format: \(question)")
                #expect(uuids(byPredicate) == want, "#Predicate: \(question)")
                #expect(byPredicate.count == want.count, "#Predicate: \(question)")
                if let typed {
                    #expect(
                        uuids(try await service.fetch(BookModel.self, where: EntityFilter(typed), loading: .none)) == want,
                        "typed: \(question)")
                }
                #expect(try await service.count(BookModel.self, where: .predicate(predicate)) == want.count, "count: \(question)")
                #expect(try await service.exists(BookModel.self, where: .predicate(predicate)) == !want.isEmpty, "exists: \(question)")
                var streamed: Set<UUID> = []
                for try await book in service.stream(BookModel.self, where: .predicate(predicate)) { streamed.insert(book.uuid) }
                #expect(streamed == want, "stream: \(question)")
            }
        }
    }

    @Test func datesEnumsAndTheEntitysOwnKeyPaths() async throws {
        try await withBookstore { service, _ in
            let books = try await seed(service)
            let reviews = books.flatMap { $0.reviews! }
            let since = reviews.map(\.createdAt).sorted()[reviews.count / 2]
            let recent = try await service.fetch(
                ReviewModel.self, where: .predicate(#Predicate<ReviewModel> { $0.createdAt >= since }), loading: .none)
            #expect(Set(recent.map(\.uuid)) == Set(reviews.filter { $0.createdAt >= since }.map(\.uuid)))
            let role = BookstoreModels.Role.critic
            let critics = try await service.fetch(
                UserModel.self, where: .predicate(#Predicate<UserModel> { $0.role == role }), loading: .none)
            #expect(try await service.count(UserModel.self, where: .format("role == %@", role)) == critics.count)
            #expect(critics.allSatisfy { $0.role == .critic })
            // A predicate on the entity rather than the model.
            let cheap = try await service.fetch(BookModel.self, where: .predicate(#Predicate<BookEntity> { $0.price < 2 }), loading: .none)
            #expect(uuids(cheap) == uuids(books.filter { $0.price! < 2 }))
            let first = try #require(
                try await service.fetchOne(
                    BookModel.self, where: .predicate(#Predicate<BookEntity> { $0.price < 2 }), sortedBy: [.ascending("price")]))
            #expect(first.price == books.map { $0.price! }.min())
            let deleted = try await service.deleteAll(
                ReviewModel.self, where: .predicate(#Predicate<ReviewModel> { $0.createdAt >= since }))
            #expect(deleted == recent.count)
            #expect(try await service.count(ReviewModel.self) == reviews.count - recent.count)
        }
    }

    @Test func injectionThroughACapturedValueFindsNothingAndDropsNothing() async throws {
        try await withBookstore { service, _ in
            let books = try await seed(service)
            for evil in ["x' OR '1'='1", "'; DROP TABLE books; --", "%", "_", "\\"] {
                let found = try await service.fetch(
                    BookModel.self, where: .predicate(#Predicate<BookModel> { $0.title == evil }), loading: .none)
                #expect(found.isEmpty, "\(evil)")
                let containing = try await service.count(
                    BookModel.self, where: .predicate(#Predicate<BookModel> { $0.title?.contains(evil) ?? false }))
                #expect(containing == books.filter { $0.title!.contains(evil) }.count, "\(evil)")
            }
            #expect(try await service.count(BookModel.self) == books.count)
        }
    }

    @Test func whatCannotBeCompiledIsRefusedByNameBeforeAnythingIsSent() async throws {
        try await withBookstore { service, log in
            _ = try await seed(service)
            log.reset()
            let cases: [(Predicate<BookModel>, String)] = [
                (#Predicate<BookModel> { $0.price! * 2 > 3 }, "Arithmetic cannot be compiled to SQL"),
                (#Predicate<BookModel> { $0.title == $0.publisher }, "comparing two properties is not supported"),
                (#Predicate<BookModel> { ($0.price! > 3 ? $0.publisher : $0.title) == "x" }, "Conditional cannot be compiled to SQL"),
                (#Predicate<BookModel> { $0.price ?? 0 > 3 ? true : false }, "Conditional cannot be compiled to SQL"),
                (
                    #Predicate<BookModel> { ($0.price ?? 0) < 3 },
                    "NilCoalesce cannot be compiled to SQL: only a condition ?? true or ?? false"
                ),
                (#Predicate<BookModel> { $0.uuid.uuidString == "x" }, "'uuid' holds a UUID, and"),
            ]
            for (predicate, message) in cases {
                let error = await #expect(throws: StructPostgresError.self) {
                    try await service.fetch(BookModel.self, where: .predicate(predicate))
                }
                #expect(error?.code == .unsupportedPredicate)
                #expect(error?.message.contains(message) == true, "\(error?.message ?? "no error")")
                #expect(error?.message.contains("nothing is filtered in the client") == true)
                let counted = await #expect(throws: StructPostgresError.self) {
                    try await service.count(BookModel.self, where: .predicate(predicate))
                }
                #expect(counted?.code == .unsupportedPredicate)
            }
            let deleteError = await #expect(throws: StructPostgresError.self) {
                try await service.deleteAll(BookModel.self, where: .predicate(#Predicate<BookModel> { $0.price! * 2 > 3 }))
            }
            #expect(deleteError?.code == .unsupportedPredicate)
            #expect(log.all.isEmpty, "nothing was sent: \(log.all)")
        }
    }

    /// A key path that is not a stored property (a computed one, or the wrapped value of `@Related`) has no column:
    /// every verb refuses it as `unsupportedPredicate`, naming the model, the value's type and what to write instead,
    /// before anything is sent.
    @Test func aComputedOrRelatedPropertyIsRefusedByEveryVerbBeforeAnythingIsSent() async throws {
        try await withBookstore { service, log in
            let books = try await seed(service)
            log.reset()
            typealias Refusal = (label: String, message: [String], run: (PostgresService) async throws -> Void)
            func refusals(_ filter: EntityFilter<BookEntity>, _ label: String, _ message: [String]) -> [Refusal] {
                [
                    ("fetch", { _ = try await $0.fetch(BookModel.self, where: filter) }),
                    ("fetchOne", { _ = try await $0.fetchOne(BookModel.self, where: filter) }),
                    ("count", { _ = try await $0.count(BookModel.self, where: filter) }),
                    ("exists", { _ = try await $0.exists(BookModel.self, where: filter) }),
                    ("deleteAll", { _ = try await $0.deleteAll(BookModel.self, where: filter) }),
                    ("stream", { for try await _ in $0.stream(BookModel.self, where: filter) {} }),
                    ("observe", { for try await _ in $0.observe(BookModel.self, where: filter) { break } }),
                ].map { verb, run in ("\(verb) \(label)", message, run) }
            }
            let computed = [
                "a computed property of BookModel (of type Int64)", "or a property wrapper's wrapped value",
                "compare stored properties of BookModel",
            ]
            let relatedAuthor = [
                "BookEntity.author, a @Related relationship slot (of type Optional<AuthorModel>)",
                "compare stored properties of BookEntity", #""author.<property> == %@""#,
            ]
            let cases: [Refusal] =
                refusals(.predicate(#Predicate<BookModel> { $0.priceInCents > 150 }), "a computed property of the model", computed)
                + refusals(
                    .predicate(#Predicate<BookEntity> { $0.hasPublisher }), "a computed Bool of the entity",
                    ["a computed property of BookEntity (of type Bool)"])
                + refusals(
                    .predicate(#Predicate<BookModel> { $0.author?.initials == "A" }), "a computed property of a related model",
                    ["a computed property of AuthorModel (of type String)", "compare stored properties of AuthorModel"])
                + refusals(.predicate(#Predicate<BookEntity> { $0.author?.name == "Author 0" }), "through @Related (to-one)", relatedAuthor)
                + refusals(.predicate(#Predicate<BookEntity> { $0.author == nil }), "@Related compared with nil", relatedAuthor)
                + refusals(
                    .predicate(#Predicate<BookEntity> { $0.reviews.contains { $0.content == "x" } }), "through @Related (to-many)",
                    ["BookEntity.reviews, a @Related relationship slot (of type Array<ReviewModel>)", #""reviews.<property> == %@""#])
            for (label, message, run) in cases {
                log.reset()
                let error = await #expect(throws: StructPostgresError.self, "\(label)") { try await run(service) }
                #expect(log.all.isEmpty, "\(label): nothing was sent: \(log.all)")
                #expect(error?.code == .unsupportedPredicate, "\(label): \(String(describing: error))")
                let text = error?.message ?? ""
                #expect(text.hasPrefix("#Predicate: KeyPath cannot be compiled to SQL: the key path reads "), "\(label): \(text)")
                #expect(
                    text.hasSuffix("; nothing is filtered in the client, so rewrite the expression or use a format string"),
                    "\(label): \(text)")
                for part in message { #expect(text.contains(part), "\(label): \(text) lacks \(part)") }
                #expect(!text.contains("<computed"), "\(label): \(text)")
            }
            #expect(try await service.count(BookModel.self) == books.count)
            // The same predicates through a format string, or on the stored properties, work.
            #expect(try await service.count(BookModel.self, where: .format("author.name == %@", "Author 0")) > 0)
            #expect(try await service.count(BookModel.self, where: .predicate(#Predicate<BookEntity> { $0.authorID == nil })) == 1)
        }
    }
}

extension BookModel {
    /// Computed: no column holds it.
    fileprivate var priceInCents: Int64 { Int64(((price ?? 0) * 100).rounded()) }
}

extension BookEntity {
    fileprivate var hasPublisher: Bool { publisher != nil }
}

extension AuthorModel {
    fileprivate var initials: String { String(name.prefix(1)) }
}
