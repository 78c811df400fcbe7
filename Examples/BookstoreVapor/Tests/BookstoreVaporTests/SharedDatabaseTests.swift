@testable import BookstoreVapor
import BookstoreModels
import Fluent
import FluentPostgresDriver
import Foundation
import StructPostgres
import StructPostgresTesting
import StructPostgresVapor
import Testing
import VaporTesting

/// The migration path of the guide "Coming from Fluent": an app moving over runs Fluent and StructPostgres on one
/// database. Each keeps its own record of migrations (`_fluent_migrations`, `structpg_migrations`), and each reads
/// what the other wrote.
@Suite struct SharedDatabaseTests {
    @Test func fluentAndStructPostgresShareOneDatabase() async throws {
        let database = try await TestDatabase.create()
        do {
            try await withApp(configure: { app in
                try await configure(app, database: database.settings)
                app.databases.use(.postgres(configuration: try SQLPostgresConfiguration(url: database.url)), as: .psql)
                app.migrations.add(CreateWishlistItem())
                try await app.autoMigrate()
            }) { app in
                try await app.asyncBoot()
                let store = app.structPostgres.service
                let book = BookModel(uuid: UUID(), title: "Four Ways to Forgiveness", price: 11)
                try await store.update(entities: [book])

                let read = try #require(try await FluentBook.find(book.uuid, on: app.db))
                #expect(read.title == book.title && read.price == 11)
                read.price = 12
                try await read.save(on: app.db)
                try await WishlistItem(book: book.uuid).create(on: app.db)
                #expect(try await store.find(BookModel.self, id: book.uuid)?.price == 12)

                let fluent = try await store.query("SELECT name FROM _fluent_migrations").map { try $0.decode(String.self) }
                let structpg = try await store.query("SELECT count(*)::int8 FROM structpg_migrations")[0].decode(Int64.self)
                #expect(fluent == ["BookstoreVaporTests.CreateWishlistItem"])
                // Every file of the repository's migrations/, which `configure` applied.
                let files = try FileManager.default.contentsOfDirectory(atPath: repositoryMigrations.path).filter { $0.hasSuffix(".sql") }
                #expect(structpg == Int64(files.count) && files.count >= 5)
                try await app.autoRevert()
                #expect(try await store.query("SELECT to_regclass('wishlist_items') IS NULL")[0].decode(Bool.self))
                #expect(try await store.count(BookModel.self) == 1)
            }
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }
}

/// The books table, as a Fluent model over the columns StructPostgres's migrations made.
final class FluentBook: Model, @unchecked Sendable {
    static let schema = "books"
    @ID(custom: "uuid", generatedBy: .user) var id: UUID?
    @OptionalField(key: "title") var title: String?
    @Field(key: "price") var price: Double
    init() {}
}

/// A table Fluent still owns while the app moves over.
final class WishlistItem: Model, @unchecked Sendable {
    static let schema = "wishlist_items"
    @ID(key: .id) var id: UUID?
    @Parent(key: "book_id") var book: FluentBook
    init() {}
    init(book: UUID) { self.$book.id = book }
}

/// Fluent's migration of `wishlist_items`, recorded in `_fluent_migrations`.
struct CreateWishlistItem: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema("wishlist_items").id()
            .field("book_id", .uuid, .required, .references("books", "uuid", onDelete: .cascade)).create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema("wishlist_items").delete()
    }
}
