import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

@Suite struct BookstoreAppTests {
    /// The example app against a fresh database, twice: it prints the store, and the second run adds nothing.
    @Test func theExampleAppPrintsTheStoreAndRunsTwiceWithoutDuplicates() async throws {
        let database = try await TestDatabase.create()
        let app = CLI.product("Bookstore")
        let runs: Result<[CLI.Result], any Error>
        do {
            var results: [CLI.Result] = []
            for _ in 1...2 {
                results.append(
                    try await CLI.run(
                        [], environment: ["DATABASE_URL": database.url, "LISTEN_DATABASE_URL": database.directURL], binary: app))
            }
            runs = .success(results)
        } catch {
            runs = .failure(error)
        }
        try await database.drop()
        let (first, second) = try runs.map { ($0[0], $0[1]) }.get()
        #expect(first.status == 0, "\(first.errors)")
        #expect(
            first.output.contains(
                "Migrations applied: 0001_create_bookstore.sql, 0002_user_invitations.sql, 0003_observe_reviews.sql, 0004_observe_reviews_by_operation.sql, 0005_review_stars.sql, 0006_book_versions.sql"
            ))
        #expect(first.output.contains("Wrote stores, books and authors: 9 inserted, 0 updated, 0 unchanged, 5 books shelved, 0 taken off"))
        // The live view: the current list, then a fresh one after the review is added and after it is removed.
        #expect(
            first.output.contains(
                """
                Live: The Hobbit has 2 reviews, the newest: "Second breakfast!"
                Live: The Hobbit has 3 reviews, the newest: "Read it twice."
                Live: The Hobbit has 2 reviews, the newest: "Second breakfast!"
                """))
        #expect(
            first.output.contains(
                """
                Safari
                  Dune by Frank Herbert, 15.00
                    "The spice must flow." — Ann (critic)
                    "Sand everywhere, and I loved it." — Dana (critic)
                  The Dispossessed by Ursula K. Le Guin, 11.00
                    "Ambiguous, in the best way." — Cleo (admin)
                """))
        #expect(first.output.contains("Ann, critic, invited by Cleo"))
        #expect(first.output.contains("Imported users.json: 3 records, 2 inserted, 1 updated, 0 unchanged, 0 merged"))
        #expect(first.output.contains("Imported reviews.json: 3 records, 2 inserted, 0 updated, 0 unchanged, 1 merged"))
        #expect(first.output.contains("Emil, reader, invited by Dana"))
        let counts = "Rows: stores=2, books=4, authors=3, reviews=6, users=5, store_books=5"
        #expect(first.output.contains(counts))

        #expect(second.status == 0, "\(second.errors)")
        #expect(second.output.contains("Migrations: the database is up to date."))
        #expect(second.output.contains("0 inserted, 0 updated, 9 unchanged, 0 books shelved, 0 taken off"))
        #expect(second.output.contains("Imported reviews.json: 3 records, 0 inserted, 0 updated, 2 unchanged, 1 merged"))
        #expect(second.output.contains(counts))
    }
}
