import Foundation
import Testing
@testable import Bookstore
import BookstoreModels
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

/// A book whose conversion fails for some rows, to show which failure a call reports, or registers a second
/// book of its own.
private struct Fussy: EntityConvertible {
    typealias Entity = FussyEntity
    var uuid = UUID()
    var refused = false
    var companion: UUID?

    func toEntity(context: EntityContext) throws -> FussyEntity {
        guard !refused else { throw StructPostgresError(.invalidValue, "book \(uuid) refused", entity: "FussyEntity") }
        if let companion { context.register(FussyEntity(uuid: companion, title: "companion")) }
        return FussyEntity(uuid: uuid, title: "kept")
    }
}

private struct FussyEntity: EntityProtocol {
    static let table = "books"
    var uuid: UUID
    var title: String
    func toModel() -> Fussy { Fussy(uuid: uuid) }
}

/// Models of a call of ``ParallelRows/minimum`` or more are converted in two halves at once (two units of work,
/// joined): what is written, and the error reported, must be those of converting them in order.
@Suite(.enabled(if: ParallelRows.minimum < .max, "one core: models are only converted in order"))
struct ParallelConversionTests {
    /// 5,000 stores, those from `booksFrom` on with books: their own, with an author of 10 and a review, and every
    /// other one a book they all share.
    private func stores(booksFrom: Int = 0) -> [StoreModel] {
        let authors = (0..<10).map { AuthorModel(uuid: UUID(), name: "Author \($0)") }
        let shared = BookModel(uuid: UUID(), title: "Shared", price: 1, publisher: nil, author: authors[0], reviews: nil)
        return (0..<5_000).map { index in
            let book = UUID()
            let own = BookModel(
                uuid: book, title: "Book \(index)", price: Double(index), publisher: "P", author: authors[index % 10],
                reviews: [
                    ReviewModel(uuid: UUID(), bookID: book, content: "R\(index)", createdAt: Date(timeIntervalSince1970: Double(index)))
                ])
            let books = index < booksFrom ? nil : index % 2 == 0 ? [own, shared] : [own]
            return StoreModel(uuid: UUID(), brand: "Store \(index)", books: books)
        }
    }

    /// With books throughout, and with books in the second half only (its types and join sets new to the first's).
    @Test(arguments: [0, 2_500])
    func aLargeGraphConvertedInHalvesIsTheUnitOfWorkOfConvertingInOrder(booksFrom: Int) async throws {
        let stores = stores(booksFrom: booksFrom)
        let inOrder = try await UnitOfWork.convert(stores[...], inParallel: false)
        let inHalves = try await UnitOfWork.convert(stores[...], inParallel: true)
        func keys(_ context: EntityContext) -> [String] {
            context.tables.map { batch in
                let uuids: [UUID]
                switch batch {
                case let books as TableEntities<BookEntity>: uuids = books.entities.map(\.uuid)
                case let authors as TableEntities<AuthorModel>: uuids = authors.entities.map(\.uuid)
                case let reviews as TableEntities<ReviewModel>: uuids = reviews.entities.map(\.uuid)
                case let stores as TableEntities<StoreEntity>: uuids = stores.entities.map(\.uuid)
                default:
                    Issue.record("a batch of \(batch.entityName)")
                    uuids = []
                }
                return "\(batch.table): " + uuids.map(\.uuidString).joined(separator: ",")
            }
        }
        let tables = booksFrom == 0 ? ["reviews", "authors", "books", "stores"] : ["stores", "reviews", "authors", "books"]
        #expect(inHalves.tables.map(\.table) == tables)
        #expect(keys(inHalves) == keys(inOrder))
        let withBooks = stores.filter { $0.books != nil }
        #expect(inHalves.tables.first { $0.table == "books" }?.count == withBooks.reduce(0) { $0 + $1.books!.count })
        let sets = inHalves.joinSets.compactMap { $0 as? JoinSets<StoreEntity> }
        #expect(sets.count == 1)
        #expect(sets.first?.sources.map(\.uuid) == withBooks.map(\.uuid))
        #expect(sets.first?.sources.map { $0.books.count } == withBooks.map { $0.books!.count })
    }

    @Test func aLargeGraphIsWrittenWhole() async throws {
        try await withBookstore { service, _ in
            let stores = stores()
            let result = try await service.update(entities: stores)
            #expect(result.inserted == 5_000 + 10 + 5_001 + 5_000)  // stores, authors, books, reviews
            #expect(result.merged == 7_500 - 10 + 2_500 - 1)  // the authors and the shared book given again
            #expect(result.linked == 7_500)
            let (links, books) = (try await rowCount("store_books", service), try await rowCount("books", service))
            #expect(links == 7_500)
            #expect(books == 5_001)
            let sample = try await service.fetch(StoreModel.self, where: .equal("uuid", stores[4_998].uuid), loading: .only("books"))
            #expect(Set(sample.first?.books?.map(\.title) ?? []) == ["Book 4998", "Shared"])
        }
    }

    @Test func theFirstModelThatCannotBeConvertedIsReportedWhicheverHalfItIsIn() async throws {
        try await withTables(BookSchema.create) { service, _ in
            var books = (0..<6_000).map { _ in Fussy() }
            books[5_500].refused = true
            let late = await #expect(throws: StructPostgresError.self) { try await service.update(entities: books) }
            #expect(late?.message == "book \(books[5_500].uuid) refused")
            books[20].refused = true
            let early = await #expect(throws: StructPostgresError.self) { try await service.update(entities: books) }
            #expect(early?.message == "book \(books[20].uuid) refused")
            let deleteError = await #expect(throws: StructPostgresError.self) { try await service.delete(entities: books) }
            #expect(deleteError?.message == "book \(books[20].uuid) refused")
            let stored = try await rowCount("books", service)
            #expect(stored == 0)
        }
    }

    /// A book a conversion registers besides its own is written, in a call of one statement or of several.
    @Test(arguments: [3, 10_001])
    func aBookRegisteredBesideTheConvertedOnesIsWritten(count: Int) async throws {
        try await withTables(BookSchema.create) { service, _ in
            var books = (0..<count).map { _ in Fussy() }
            books[count - 1].companion = UUID()
            let result = try await service.update(entities: books)
            #expect(result.inserted == count + 1)
            let companions = try await service.fetch(Fussy.self, where: .equal("uuid", books[count - 1].companion!))
            #expect(companions.count == 1)
        }
    }

    @Test func aLargeDeleteRemovesEveryRowItNames() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let books = (0..<6_000).map { _ in Fussy() }
            try await service.update(entities: books)
            let deleted = try await service.delete(entities: Array(books[500..<5_500]))
            #expect(deleted == 5_000)
            let left = try await service.fetch(Fussy.self)
            #expect(Set(left.map(\.uuid)) == Set((books[..<500] + books[5_500...]).map(\.uuid)))
        }
    }
}
