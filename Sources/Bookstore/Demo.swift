import BookstoreModels
import Foundation
import StructPostgres

/// The demo's interaction: write the store, add a review and remove it, read the graph back.
struct Demo {
    let service: PostgresService

    func run() async throws {
        // Ann and Cleo invited each other: a cycle inside one table, written by one statement.
        try await service.update(entities: Catalog.users)
        // One transaction: authors, then books, then stores, then each store's set of books.
        let written = try await service.update(entities: Catalog.stores)
        print(
            "Wrote stores, books and authors: \(written.inserted) inserted, \(written.updated) updated, \(written.unchanged) unchanged, "
                + "\(written.linked) books shelved, \(written.unlinked) taken off")
        try await service.update(entities: Catalog.reviews)

        try await showLiveReviews()

        try await importFixtures()
        try await printStores()
        try await printUsers()
        try await printRowCounts()
    }

    /// Users and reviews as a web service would send them: other names, epoch dates, a repeated record.
    private func importFixtures() async throws {
        let fixtures = BookstoreApp.repositoryDirectory("fixtures")
        let users = try await service.import(
            UserModel.self, contentsOf: fixtures.appendingPathComponent("users.json"),
            options: ImportOptions(keys: .snakeCase, remoteNames: ["id": "uuid", "avatar": "avatarURL", "invited_by": "invitedByID"]))
        let reviews = try await service.import(
            ReviewModel.self, contentsOf: fixtures.appendingPathComponent("reviews.json"),
            options: ImportOptions(keys: .snakeCase, remoteNames: ["id": "uuid", "text": "content"], dates: .secondsSince1970))
        for (name, result) in [("users", users), ("reviews", reviews)] {
            print(
                "Imported \(name).json: \(result.records) records, \(result.written.inserted) inserted, "
                    + "\(result.written.updated) updated, \(result.written.unchanged) unchanged, \(result.written.merged) merged")
        }
    }

    /// A live view of The Hobbit's reviews (`observe`: a fresh list after each committed change, over the triggers
    /// of migrations 0003 and 0004), while this task adds a review and removes it.
    private func showLiveReviews() async throws {
        let (shown, show) = AsyncStream<Int>.makeStream()
        let view = Task { [service] in
            defer { show.finish() }
            let reviews = service.observe(
                ReviewModel.self, where: .format("bookID == %@", Catalog.hobbit.uuid), sortedBy: [.descending("createdAt")], loading: .none
            ).removingDuplicates()
            for try await list in reviews {
                print("Live: The Hobbit has \(list.count) reviews, the newest: \"\(list.first?.content ?? "")\"")
                show.yield(list.count)
            }
        }
        var lists = shown.makeAsyncIterator()
        // The current list, then one after each change. The view's error (observing failed) ends the stream: it is
        // thrown rather than waited on.
        for change in 0..<3 {
            if await lists.next() == nil { break }
            if change == 0 { try await service.update(entities: [Catalog.added]) }
            if change == 1 { try await service.delete(entities: [Catalog.added]) }
            if change == 2 { view.cancel() }
        }
        try await view.value
    }

    /// One fetch: stores, their books, the books' authors and reviews, the reviews' users: a query each.
    private func printStores() async throws {
        print("")
        for store in try await service.fetch(StoreModel.self, sortedBy: [.ascending("brand")]) {
            print(store.brand)
            for book in store.books ?? [] {
                let author = book.author?.name ?? "unknown author"
                print("  \(book.title ?? "untitled") by \(author), \(String(format: "%.2f", book.price ?? 0))")
                for review in book.reviews ?? [] {
                    let name = review.user.map { "\($0.name) (\($0.role.rawValue))" } ?? "anonymous"
                    print("    \"\(review.content ?? "")\" — \(name)")
                }
            }
        }
    }

    private func printUsers() async throws {
        print("")
        for user in try await service.fetch(
            UserModel.self, sortedBy: [.ascending("role"), .ascending("name")], loading: .only("invitedBy"))
        {
            print("\(user.name), \(user.role.rawValue), invited by \(user.invitedBy?.name ?? "nobody")")
        }
    }

    private func printRowCounts() async throws {
        var counts: [String] = []
        for table in ["stores", "books", "authors", "reviews", "users", "store_books"] {
            let rows = try await service.query("SELECT count(*) FROM \(unescaped: table)")
            counts.append("\(table)=\(try rows[0].decode(Int64.self))")
        }
        print("\nRows: \(counts.joined(separator: ", "))")
    }
}
