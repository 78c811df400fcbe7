import BookstoreModels
import Foundation
import StructPostgres
import Testing

private struct Shelf: StoredModel {
    static let table = "shelves"
    var uuid: UUID
    var label: String
    var capacity: Int
}

private struct Volume: StoredModel {
    static let table = "volumes"
    static let relationships: [Relationship<Self>] = [.toOne("shelf", \.$shelf)]
    var uuid: UUID
    var title: String
    var shelfID: UUID?
    var tags: [String]
    var price: Decimal?
    var addedAt: Date
    @Related var shelf: Shelf?
}

/// The same volume, a version later: one property more.
private struct VolumeWithIsbn: StoredModel {
    static let table = "volumes"
    var uuid: UUID
    var title: String
    var shelfID: UUID?
    var tags: [String]
    var price: Decimal?
    var addedAt: Date
    var isbn: String?
}

/// Drafts applied by the migrator make verify pass.
@Suite struct SchemaDraftTests {
    /// Writes the draft's files as the next migrations of `folder` and applies them.
    private func apply(_ draft: MigrationDraft, in folder: URL, from version: Int, _ service: PostgresService) async throws {
        for (offset, text) in draft.files.enumerated() {
            try text.write(
                to: folder.appendingPathComponent(String(format: "%04d_draft.sql", version + offset)), atomically: true, encoding: .utf8)
        }
        try await Migrator(service: service, migrations: try MigrationSet(directory: folder)).migrate()
    }

    @Test func fromAnEmptyDatabaseTheDraftMakesTheModelsMatchThenANewPropertyIsAddedKeepingTheRows() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("structpg-draft-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withTables { service, _ in
            let first = try await service.draftMigration(for: [Volume.self, Shelf.self])
            print(first.files.joined(separator: "\n"))
            #expect(first.files.count == 1)
            try await apply(first, in: folder, from: 1, service)
            let report = try await service.schemaReport(for: [Volume.self, Shelf.self])
            #expect(report.matches, "\(report)")
            #expect(try await service.draftMigration(for: [Volume.self, Shelf.self]).isEmpty)

            let shelf = Shelf(uuid: UUID(), label: "A", capacity: 3)
            let volume = Volume(
                uuid: UUID(), title: "Dune", shelfID: shelf.uuid, tags: ["sf"], price: 9.5, addedAt: Date(timeIntervalSince1970: 0))
            try await service.update(entities: [shelf])
            try await service.update(entities: [volume])

            let second = try await service.draftMigration(for: [VolumeWithIsbn.self])
            print(second.files.joined(separator: "\n"))
            #expect(second.up == [#"ALTER TABLE "volumes" ADD COLUMN "isbn" text;"#])
            try await apply(second, in: folder, from: 2, service)
            #expect(try await service.schemaReport(for: [VolumeWithIsbn.self, Shelf.self]).matches)
            let read = try await service.find(VolumeWithIsbn.self, id: volume.uuid)
            #expect(read?.title == "Dune" && read?.tags == ["sf"] && read?.isbn == nil, "the existing row is intact")
        }
    }

    /// Nothing a draft runs drops a table, a column or an index, or changes a type: those are `-- review:` lines.
    @Test func aDraftNeverDropsOrChangesATypeOutsideAReviewLine() async throws {
        try await withTables(
            "CREATE TABLE volumes (uuid uuid NOT NULL, title integer, shelf_id uuid, tags text[] NOT NULL, price numeric, added_at timestamptz NOT NULL)"
        ) { service, _ in
            let draft = try await service.draftMigration(for: [VolumeWithIsbn.self, Shelf.self])
            let lines = (draft.up + draft.down + draft.concurrentUp + draft.concurrentDown).flatMap { $0.split(separator: "\n") }
            for line in lines where !line.hasPrefix("-- review:") {
                #expect(!line.uppercased().contains("DROP"), "\(line)")
                #expect(!line.uppercased().contains("ALTER COLUMN") && !line.uppercased().contains(" TYPE "), "\(line)")
            }
            #expect(draft.up.contains { $0.hasPrefix("-- review: typeMismatch: VolumeWithIsbn.title") }, "\(draft.up)")
            #expect(draft.concurrentUp == [#"CREATE UNIQUE INDEX CONCURRENTLY "volumes_uuid_key" ON "volumes" ("uuid");"#])
            #expect(draft.files.last?.hasPrefix("-- migrate:up transaction:false") == true)
        }
    }
}

/// The book store's models drafted from an empty database, compared with its migrations.
@Suite struct BookstoreDraftTests {
    @Test func theBookStoresDraftMakesItsModelsMatch() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("structpg-draft-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let models = BookstoreSchema.models
        try await withTables { service, _ in
            let draft = try await service.draftMigration(for: models)
            print(draft.files.joined(separator: "\n"))
            for (offset, text) in draft.files.enumerated() {
                try text.write(
                    to: folder.appendingPathComponent(String(format: "%04d_draft.sql", 1 + offset)), atomically: true, encoding: .utf8)
            }
            try await Migrator(service: service, migrations: try MigrationSet(directory: folder)).migrate()
            let report = try await service.schemaReport(for: models)
            #expect(report.matches, "\(report)")
        }
    }
}
