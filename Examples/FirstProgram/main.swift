import Foundation
import StructPostgres

struct Book: StoredModel {            // a struct stored as itself: columns uuid, title, price
    static let table = "books"
    var uuid: UUID
    var title: String
    var price: Double
}

// DATABASE_URL, or libpq's PGHOST, PGUSER, PGPASSWORD, PGDATABASE...
let configuration = try PostgresService.Configuration.fromEnvironment()
try await PostgresService.withService(configuration: configuration) { db in
    let migrations = try MigrationSet(directory: URL(fileURLWithPath: "migrations"))
    try await Migrator(service: db, migrations: migrations).migrate()

    let dune = Book(uuid: UUID(), title: "Dune", price: 9.99)
    try await db.update(entities: [dune, Book(uuid: UUID(), title: "Emma", price: 12.5)])  // one statement
    let cheap = try await db.fetch(Book.self, where: \.price < 10, sortedBy: [.ascending(\Book.title)])
    let found = try await db.find(Book.self, id: dune.uuid)                               // nil when missing
    print(cheap.map(\.title), found?.price ?? 0)
}
