import Foundation
import StructPostgres

/// The demo's interaction: write the store, add a review and remove it, read everything back.
struct Demo {
    let service: PostgresService

    func run() async throws {
        try await service.update(entities: Catalog.users)
        // Each book's author is registered by `toEntity`: authors and books are written together,
        // authors first, one statement per table, in one transaction.
        let written = try await service.update(entities: Catalog.books)
        try await service.update(entities: [Catalog.amazon, Catalog.safari])
        try await service.update(entities: Catalog.shelves)
        try await service.update(entities: Catalog.reviews)
        print("Wrote books and authors: \(written.inserted) inserted, \(written.updated) updated")

        try await service.update(entities: [Catalog.added])
        print("Added a review; The Hobbit has \(try await reviewCount(of: Catalog.books[0])) reviews")
        try await service.delete(entities: [Catalog.added])
        print("Removed it; The Hobbit has \(try await reviewCount(of: Catalog.books[0])) reviews")

        try await printStore()
    }

    private func reviewCount(of book: BookModel) async throws -> Int {
        try await service.count(ReviewModel.self, where: .equal("bookID", book.uuid))
    }

    private func printStore() async throws {
        let authors = Dictionary(uniqueKeysWithValues: try await service.fetch(AuthorModel.self).map { ($0.uuid, $0) })
        let books = try await service.fetch(BookModel.self)
        let authorOf = Dictionary(uniqueKeysWithValues: try await authorIDs().map { ($0.0, $0.1) })
        let bookByID = Dictionary(uniqueKeysWithValues: books.map { ($0.uuid, $0) })
        let users = Dictionary(uniqueKeysWithValues: try await service.fetch(UserModel.self).map { ($0.uuid, $0) })
        let shelves = try await service.fetch(StoreBook.self)
        let reviews = Dictionary(
            grouping: try await service.fetch(ReviewModel.self, sortedBy: [.ascending("createdAt")]), by: \.bookID)

        print("")
        for store in try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")]) {
            print("\(store.brand)")
            let titles = shelves.filter { $0.storeID == store.uuid }.compactMap { bookByID[$0.bookID] }
                .sorted { ($0.title ?? "") < ($1.title ?? "") }
            for book in titles {
                let author = authorOf[book.uuid].flatMap { authors[$0] }?.name ?? "unknown author"
                print("  \(book.title ?? "untitled") by \(author), \(String(format: "%.2f", book.price ?? 0))")
                for review in reviews[book.uuid] ?? [] {
                    let name = review.userID.flatMap { users[$0] }.map { "\($0.name) (\($0.role.rawValue))" } ?? "anonymous"
                    print("    \"\(review.content ?? "")\" — \(name)")
                }
            }
        }
        let counts = try await ["stores", "books", "authors", "reviews", "users", "store_books"].asyncMap { table in
            "\(table)=\(try await service.query("SELECT count(*) FROM \(unescaped: table)")[0].decode(Int64.self))"
        }
        print("\nRows: \(counts.joined(separator: ", "))")
    }

    /// Book -> author ids; the relationships issue replaces this with loading `BookModel.author`.
    private func authorIDs() async throws -> [(UUID, UUID)] {
        try await service.query("SELECT uuid, author_id FROM books WHERE author_id IS NOT NULL").map {
            try $0.decode((UUID, UUID).self)
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
