import Foundation
@testable import Bookstore
import BookstoreModels
import StructPostgres

/// A book written as a flat row, its author given by key only.
struct FlatBook: StoredModel {
    static let table = "books"
    static let relationships: [Relationship<Self>] = [.toOne("author", \.$author)]
    let uuid: UUID
    var title: String?
    var price: Double
    var authorID: UUID?
    @Related var author: AuthorModel?
}

/// The graph tests use the example app's models (`Bookstore`): stores own sets of books through
/// `store_books`, books have an author and reviews, reviews a user, users an inviter.

/// The repository's `migrations/`, which the example app applies too.
let repositoryMigrations = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("../../../migrations").standardized

/// A fresh database with the book-store migrations applied, and a log of the statements sent after that.
func withBookstore<T>(
    pool: PoolOptions = PoolOptions(maxConnections: 4), _ body: (PostgresService, StatementLog) async throws -> T
) async throws -> T {
    try await withTables(pool: pool) { service, log in
        _ = try await Migrator(service: service, migrations: try MigrationSet(directory: repositoryMigrations)).migrate()
        log.reset()
        return try await body(service, log)
    }
}

/// A digest of every row of `table`, to show a table did not change.
func tableDigest(_ table: String, _ service: PostgresService) async throws -> String {
    let rows = try await service.query(
        "SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM \(unescaped: table) t")
    return try rows[0].decode(String.self)
}
