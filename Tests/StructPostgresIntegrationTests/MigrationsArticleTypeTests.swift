import Foundation
import StructPostgres
import Testing

/// The *Migrations* article's table of Swift types and columns, drafted type by type: the article and the drafter
/// cannot disagree.
@Suite struct MigrationsArticleTypeTests {
    private static let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/StructPostgres/StructPostgres.docc/Migrations.md").standardized

    /// Each row's Swift types and the column type it names (the first code span of its right cell). A row's prose
    /// stands for a type too: an enum with raw values, any other `Codable` value, `[T]` for every `T` above.
    static func rows() throws -> [(kinds: [ValueKind], column: String, row: String)] {
        let text = try String(contentsOf: article, encoding: .utf8)
        let table = try #require(text.firstMatch(of: /\| Swift \| Column \|\n\|---\|---\|\n((?:\|.*\|\n)+)/)?.output.1)
        var rows: [(kinds: [ValueKind], column: String, row: String)] = []
        for line in table.split(separator: "\n") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let swift = cells[0].matches(of: /`([^`]+)`/).map { String($0.output.1) }
            let column = try #require(cells[1].firstMatch(of: /`([^`]+)`/)?.output.1, "\(line)")
            var kinds = swift.compactMap(ValueKind.init(swiftName:))
            if cells[0].contains("enum with") { kinds.append(.role) }
            if cells[0].contains("other `Codable`") { kinds.append(.json) }
            if swift.first == "[T]" {
                let scalars = rows.flatMap(\.kinds).filter { $0 != .role && $0 != .json }
                rows.append((scalars.map { .array($0) }, "", String(line)))
                continue
            }
            rows.append((kinds, String(column), String(line)))
        }
        return rows
    }

    @Test func everyTypeOfTheArticlesTableIsDraftedAsTheColumnItNames() async throws {
        let rows = try Self.rows()
        #expect(rows.count >= 10, "the table was found: \(rows)")
        var expected: [(key: String, kind: ValueKind, column: String)] = []
        for row in rows {
            #expect(!row.kinds.isEmpty, "a row the test cannot check: \(row.row)")
            for kind in row.kinds {
                // `[T]`'s column is T's: found in the rows above.
                let column: String
                if case .array(let element) = kind {
                    column = try #require(rows.first { $0.kinds.contains(element) }?.column) + "[]"
                } else {
                    column = row.column
                }
                expected.append(("p\(expected.count)", kind, column))
            }
        }
        #expect(Set(ValueKind.scalars).isSubset(of: Set(expected.map(\.kind))), "every scalar the library stores is in the table")
        #expect(Set(ValueKind.elements.map { ValueKind.array($0) }).isSubset(of: Set(expected.map(\.kind))), "every array too")
        let shape = ModelShape(
            table: "typed",
            properties: [PropertyShape(key: "uuid", kind: .uuid, optional: false)]
                + expected.map { PropertyShape(key: $0.key, kind: $0.kind, optional: false) })
        try await withTables { service, _ in
            try await withFreshTag(
                FreshDepth.take(),
                WithModel(shape) { models in
                    let text = try #require(try await service.draftMigration(for: models).files.first)
                    for (key, kind, column) in expected {
                        #expect(text.contains("\"\(key)\" \(column) NOT NULL,"), "\(kind): the article says \(column); the draft: \(text)")
                    }
                })
        }
    }
}
