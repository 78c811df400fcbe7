import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// A fetch's `SELECT` text is kept per shape: after the schema changes and `forgetSchemaCache()`, the same fetch
/// is built again from the new layout.
@Suite struct SelectTemplateServiceTests {
    @Test func aFetchAfterForgetSchemaCacheReadsTheNewLayout() async throws {
        try await TestPostgres.withDatabase { service in
            try await service.execute(unsafeSQL: BookSchema.create)
            let id = UUID()
            try await service.update(entities: [Novel(uuid: id, title: "Dune", price: 1, publisher: nil)])
            let before: [Novel] = try await service.fetch(where: .equal("price", 1.0))
            #expect(before.map(\.title) == ["Dune"])
            // The column the model reads as `title` is now the table's last one.
            try await service.execute(unsafeSQL: "ALTER TABLE books RENAME COLUMN title TO headline")
            try await service.execute(unsafeSQL: "ALTER TABLE books ADD COLUMN title text")
            try await service.execute(unsafeSQL: "UPDATE books SET title = 'Dune, renamed'")
            service.forgetSchemaCache()
            let after: [Novel] = try await service.fetch(where: .equal("price", 1.0))
            #expect(after == [Novel(uuid: id, title: "Dune, renamed", price: 1, publisher: nil)])
        }
    }
}
