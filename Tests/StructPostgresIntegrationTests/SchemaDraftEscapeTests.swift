import BookstoreModels
import Foundation
import StructPostgres
import Testing

/// Names from the catalog and coding keys can hold any character: none of them gets out of the identifier or the
/// `-- review:` comment the drafter writes it in, nor out of its line in `schema verify`'s output.
@Suite struct SchemaDraftEscapeTests {
    /// Every C0 and C1 control character, DEL, the line and paragraph separators, and format characters that change
    /// how a line reads (a bidirectional override, a zero-width space, a byte-order mark).
    static let unsafe: [Unicode.Scalar] =
        (0x01...0x1F).map { Unicode.Scalar($0)! } + (0x7F...0x9F).map { Unicode.Scalar($0)! }
        + ["\u{2028}", "\u{2029}", "\u{202E}", "\u{200B}", "\u{FEFF}"]

    static func injected(_ scalar: Unicode.Scalar) -> String { "x\(Character(scalar))DROP TABLE IF EXISTS victims; --" }

    /// Whether `text` holds a scalar that could end a comment or a line, other than the line breaks between lines.
    static func holdsUnsafe(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0 != "\n" && unsafe.contains($0) }
    }

    static func victimsExist(_ service: PostgresService) async throws -> Bool {
        try await service.query("SELECT to_regclass('victims') IS NOT NULL")[0].decode(Bool.self)
    }

    @Test func aCodingKeyWithAControlCharacterStaysInsideItsQuotedName() async throws {
        let shape = ModelShape(
            table: "escapes",
            properties: [PropertyShape(key: "uuid", kind: .uuid, optional: false)]
                + Self.unsafe.map { PropertyShape(key: Self.injected($0), kind: .string, optional: false) })
        try await withTables("CREATE TABLE victims (id int)") { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let draft = try await service.draftMigration(for: models)
                    let text = draft.files.joined(separator: "\n")
                    #expect(!Self.holdsUnsafe(text), "\(text.debugDescription)")
                    #expect(text.contains(#"U&"x\+00000A"#), "\(text)")
                    try await DraftHarness(service).apply(draft)
                    #expect(try await Self.victimsExist(service))
                    let report = try await service.schemaReport(for: models)
                    #expect(report.matches, "\(report)")
                    #expect(try await service.draftMigration(for: models).isEmpty)
                })
        }
    }

    @Test func aCatalogColumnWithAControlCharacterStaysInsideItsReviewLine() async throws {
        let columns = Self.unsafe.map { "\"\(Self.injected($0))\" text NOT NULL" }.joined(separator: ", ")
        let shape = ModelShape(
            table: "gadgets",
            properties: [
                PropertyShape(key: "uuid", kind: .uuid, optional: false), PropertyShape(key: "label", kind: .string, optional: true),
            ])
        try await withTables("CREATE TABLE victims (id int)", "CREATE TABLE gadgets (uuid uuid PRIMARY KEY, \(columns))") { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let draft = try await service.draftMigration(for: models)
                    let text = draft.files.joined(separator: "\n")
                    #expect(!Self.holdsUnsafe(text), "\(text.debugDescription)")
                    for line in text.split(separator: "\n") {
                        #expect(line.hasPrefix("-- ") || line.hasPrefix(#"ALTER TABLE "gadgets" ADD COLUMN "label" text;"#), "\(line)")
                    }
                    #expect(draft.reviews.count == Self.unsafe.count, "\(draft.reviews)")
                    try await DraftHarness(service).apply(draft)
                    #expect(try await Self.victimsExist(service))
                    let report = try await service.schemaReport(for: models)
                    #expect(report.mismatches.count == Self.unsafe.count)
                    #expect(report.description.split(separator: "\n").count == Self.unsafe.count + 1, "one line per mismatch")
                    #expect(!Self.holdsUnsafe(report.description))
                })
        }
    }

    /// A name PostgreSQL cannot hold as it is (a NUL, more than 63 bytes) is a review line, not DDL that would
    /// fail or create another name than the model's.
    @Test func aNameNoPostgreSQLIdentifierCanHoldIsAReviewLine() async throws {
        let long = String(repeating: "long", count: 17)
        let shape = ModelShape(
            table: "odd_names",
            properties: [
                PropertyShape(key: "uuid", kind: .uuid, optional: false), PropertyShape(key: "a\u{0}b", kind: .string, optional: false),
                PropertyShape(key: long, kind: .int, optional: false),
            ])
        try await withTables { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let draft = try await service.draftMigration(for: models)
                    #expect(draft.reviews.contains { $0.contains("holds a NUL character") }, "\(draft.reviews)")
                    #expect(draft.reviews.contains { $0.contains("longer than 63 bytes") }, "\(draft.reviews)")
                    try await DraftHarness(service).apply(draft)
                    let report = try await service.schemaReport(for: models)
                    #expect(report.mismatches.map(\.kind) == [.missingColumn, .missingColumn], "\(report)")
                })
        }
    }

    /// `schema verify` (text and `--json`) and `migrate draft`, run as users run them, on a column whose name
    /// holds each control character.
    @Test func theCommandLineKeepsEachNameOnItsLine() async throws {
        try await withCLI([:]) { cli, files, service in
            try await DraftHarness(service).draftAndApply(BookstoreSchema.models)
            for scalar in Self.unsafe {
                _ = try await service.query("ALTER TABLE authors ADD COLUMN \"\(unescaped: Self.injected(scalar))\" text NOT NULL")
            }
            let run = { (arguments: [String]) in
                try await CLI.run(arguments, environment: ["DATABASE_URL": cli.databaseURL], binary: CLI.product("Bookstore"))
            }
            let json = try await run(["schema", "verify", "--json"])
            #expect(json.status == 1)
            struct Report: Decodable {
                struct Mismatch: Decodable { let column: String? }
                let mismatches: [Mismatch]
            }
            let columns = try JSONDecoder().decode(Report.self, from: Data(json.output.utf8)).mismatches.compactMap(\.column)
            #expect(Set(columns) == Set(Self.unsafe.map(Self.injected)), "JSON gives each name back exactly")

            let text = try await run(["schema", "verify"])
            #expect(text.status == 1)
            #expect(!Self.holdsUnsafe(text.output), "\(text.output.debugDescription)")
            let lines = text.output.split(separator: "\n")
            #expect(lines.count == Self.unsafe.count + 1)
            #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("- unwrittenRequiredColumn: ") }, "\(lines)")

            let folder = files.directory.appendingPathComponent("drafts")
            let draft = try await run(["migrate", "draft", "review_only", "--migrations-dir", folder.path])
            #expect(draft.status == 1, "only review lines: no file")
            #expect(!Self.holdsUnsafe(draft.output))
            #expect(draft.output.split(separator: "\n").dropFirst().allSatisfy { $0.hasPrefix("-- review: ") }, "\(draft.output)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty ?? true)
        }
    }
}
