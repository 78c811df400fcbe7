import Foundation
import Testing
@testable import Bookstore
@testable import StructPostgres

/// A book whose conversion fails for some rows, to show which failure a call reports.
private struct Fussy: EntityConvertible {
    typealias Entity = FussyEntity
    var uuid = UUID()
    var refused = false

    func toEntity(context: EntityContext) throws -> FussyEntity {
        guard !refused else { throw StructPostgresError(.invalidValue, "book \(uuid) refused", entity: "FussyEntity") }
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
    /// 5,000 stores of two books each, with 10 authors between them and a book every store in both halves shares.
    private func stores() -> [StoreModel] {
        let authors = (0..<10).map { AuthorModel(uuid: UUID(), name: "Author \($0)") }
        let shared = BookModel(uuid: UUID(), title: "Shared", price: 1, publisher: nil, author: authors[0], reviews: nil)
        return (0..<5_000).map { index in
            let book = UUID()
            let own = BookModel(
                uuid: book, title: "Book \(index)", price: Double(index), publisher: "P", author: authors[index % 10],
                reviews: [ReviewModel(uuid: UUID(), bookID: book, content: "R\(index)", createdAt: Date(timeIntervalSince1970: Double(index)))])
            return StoreModel(uuid: UUID(), brand: "Store \(index)", books: index % 2 == 0 ? [own, shared] : [own])
        }
    }

    @Test func aLargeGraphConvertedInHalvesIsTheUnitOfWorkOfConvertingInOrder() throws {
        let stores = stores()
        let inOrder = try EntityOperations.unitOfWork(stores[...], inParallel: false)
        let inHalves = try EntityOperations.unitOfWork(stores[...], inParallel: true)
        func keys(_ context: EntityContext) -> [String] {
            context.registeredBatches.map { batch in
                let uuids: [UUID] = switch batch {
                case let books as TypedEntityBatch<BookEntity>: books.entities.map(\.uuid)
                case let authors as TypedEntityBatch<AuthorModel>: authors.entities.map(\.uuid)
                case let reviews as TypedEntityBatch<ReviewModel>: reviews.entities.map(\.uuid)
                case let stores as TypedEntityBatch<StoreEntity>: stores.entities.map(\.uuid)
                default: []
                }
                return "\(batch.table): " + uuids.map(\.uuidString).joined(separator: ",")
            }
        }
        #expect(inHalves.registeredBatches.map(\.table) == ["reviews", "authors", "books", "stores"])
        #expect(keys(inHalves) == keys(inOrder))
        #expect(inHalves.registeredBatches.map(\.count) == [5_000, 7_500, 7_500, 5_000])
        let sets = inHalves.registeredJoinSets.compactMap { $0 as? JoinSetBatch<StoreEntity> }
        #expect(sets.count == 1)
        #expect(sets.first?.sources.map(\.uuid) == stores.map(\.uuid))
        #expect(sets.first?.sources.map { $0.books.count } == stores.map { $0.books!.count })
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
