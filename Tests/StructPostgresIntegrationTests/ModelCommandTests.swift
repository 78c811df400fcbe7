import Foundation
import StructPostgres
import Testing

/// `schema verify` and `migrate draft`, run as users run them: the `Bookstore` example's executable, whose `main`
/// hands its arguments and the book store's models to `StructPG.main(models:)`.
@Suite(.serialized) struct ModelCommandTests {
    private struct Report: Decodable {
        struct Mismatch: Decodable {
            let kind: String
            let model: String
            let table: String
            let message: String
        }
        let matches: Bool
        let mismatches: [Mismatch]
    }

    private func bookstore(_ cli: CLI, _ arguments: String...) async throws -> CLI.Result {
        try await CLI.run(arguments, environment: ["DATABASE_URL": cli.databaseURL], binary: CLI.product("Bookstore"))
    }

    @Test func anEmptyDatabaseFailsVerifyNamingEveryModelsTable() async throws {
        try await withCLI([:]) { cli, _, _ in
            let json = try await bookstore(cli, "schema", "verify", "--json")
            #expect(json.status == 1, "\(json.errors)")
            let report = try JSONDecoder().decode(Report.self, from: Data(json.output.utf8))
            #expect(!report.matches)
            #expect(
                Set(report.mismatches.filter { $0.kind == "missingTable" }.map(\.table)) == [
                    "stores", "books", "authors", "reviews", "users",
                ])
            #expect(report.mismatches.allSatisfy { !$0.model.isEmpty && !$0.message.isEmpty })

            let text = try await bookstore(cli, "schema", "verify")
            #expect(text.status == 1)
            #expect(text.output.contains("books"), "\(text.output)")
        }
    }

    @Test func aDraftWrittenThenAppliedMakesVerifyPass() async throws {
        try await withCLI([:]) { cli, files, service in
            let folder = files.directory.appendingPathComponent("migrations")
            let draft = try await bookstore(cli, "migrate", "draft", "create_bookstore", "--sequential", "--migrations-dir", folder.path)
            #expect(draft.status == 0, "\(draft.errors)")
            let written = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            #expect(written == ["0001_create_bookstore.sql"], "\(draft.output)")
            #expect(draft.output.contains(folder.appendingPathComponent("0001_create_bookstore.sql").path))

            // Drafting again before the draft is applied would draft it twice.
            let early = try await bookstore(cli, "migrate", "draft", "again", "--migrations-dir", folder.path)
            #expect(early.status == 1)
            #expect(early.errors.hasPrefix("Bookstore: 1 migration is not applied (0001_create_bookstore.sql)"), "\(early.errors)")
            #expect(early.errors.contains("migrate up` first"))

            let up = try await bookstore(cli, "migrate", "up", "--migrations-dir", folder.path)
            #expect(up.status == 0, "\(up.errors)")
            #expect(up.output.contains("Applied 0001_create_bookstore.sql"))
            let verify = try await bookstore(cli, "schema", "verify")
            #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
            #expect(verify.output.contains("The models agree with the database's schema."))

            let nothing = try await bookstore(cli, "migrate", "draft", "again", "--migrations-dir", folder.path)
            #expect(nothing.status == 0, "\(nothing.errors)")
            #expect(nothing.output.contains("nothing to draft"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 1)

            // A column the models need is missing: the next draft adds it (nullable: `content` is optional), and nothing else.
            _ = try await service.query("ALTER TABLE reviews DROP COLUMN content")
            let missing = try await bookstore(cli, "schema", "verify", "--json")
            #expect(missing.status == 1)
            let report = try JSONDecoder().decode(Report.self, from: Data(missing.output.utf8))
            #expect(report.mismatches.map(\.kind) == ["missingColumn"], "\(missing.output)")
            let add = try await bookstore(cli, "migrate", "draft", "restore_content", "--sequential", "--migrations-dir", folder.path)
            #expect(add.status == 0, "\(add.errors)")
            let text = try String(contentsOf: folder.appendingPathComponent("0002_restore_content.sql"), encoding: .utf8)
            #expect(
                text.hasPrefix("-- migrate:up\nALTER TABLE \"reviews\" ADD COLUMN \"content\" text;\n\n-- migrate:down\n-- review:"),
                "\(text)")
            #expect(try await bookstore(cli, "migrate", "up", "--migrations-dir", folder.path).status == 0)
            #expect(try await bookstore(cli, "schema", "verify").status == 0)
        }
    }

    @Test func theStructpgBinarySaysWhereTheModelCommandsRun() async throws {
        try await withCLI([:]) { cli, _, _ in
            for arguments in [["schema", "verify"], ["migrate", "draft", "x", "--migrations-dir", cli.migrations.path]] {
                let result = try await CLI.run(arguments, environment: ["DATABASE_URL": cli.databaseURL])
                #expect(result.status == 1)
                #expect(
                    result.errors.hasPrefix("structpg: `\(arguments[0...1].joined(separator: " "))` needs the app's models"),
                    "\(result.errors)")
                #expect(result.errors.contains("StructPG.main(models:"))
            }
        }
    }
}
