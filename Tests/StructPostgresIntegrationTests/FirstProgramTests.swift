import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

private struct Book: StoredModel {
    static let table = "books"
    var uuid: UUID
    var title: String
    var price: Double
}

private let examples = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("../../Examples/FirstProgram").standardized

/// The README's first program and the tutorial's test, as written there (`DocumentationTests` checks they match).
@Suite struct FirstProgramTests {
    @Test func theREADMEProgramRunsAsWritten() async throws {
        let database = try await TestDatabase.create()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("first-program-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: examples.appendingPathComponent("migrations"), to: folder.appendingPathComponent("migrations"))
        let run: Result<CLI.Result, any Error>
        do {
            run = .success(try await CLI.run([], environment: ["DATABASE_URL": database.url], binary: CLI.product("FirstProgram"), in: folder))
        } catch {
            run = .failure(error)
        }
        try? FileManager.default.removeItem(at: folder)
        try await database.drop()
        let result = try run.get()
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == "[\"Dune\"] 9.99\n")
    }

    // tutorial: begin
    @Test func booksAreStoredAndFound() async throws {
        try await TestPostgres.withDatabase { db in
            try await db.execute(unsafeSQL: """
                CREATE TABLE books (uuid uuid PRIMARY KEY, title text NOT NULL, price double precision NOT NULL)
                """)
            let emma = Book(uuid: UUID(), title: "Emma", price: 12.5)
            try await db.update(entities: [emma])

            #expect(try await db.find(Book.self, id: emma.uuid)?.title == "Emma")
            #expect(try await db.find(Book.self, id: UUID()) == nil)
            #expect(try await db.count(Book.self, where: .format("price > %@", 10.0)) == 1)
        }
    }
    // tutorial: end
}
