import Foundation
import Testing

private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

private func text(_ path: String) throws -> String { try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) }

/// The code blocks of a Markdown file, in order, with their language.
private func codeBlocks(_ path: String) throws -> [(language: String, code: String)] {
    let markdown = try text(path)
    return markdown.matches(of: /```(\w*)\n((?s).*?)```/).map { (String($0.output.1), String($0.output.2)) }
}

/// The code the README and the tutorial show is the code the test suite compiles and runs
/// (`Examples/FirstProgram`, `FirstProgramTests`).
@Suite struct DocumentationTests {
    private let program = "Examples/FirstProgram/main.swift"
    private let migration = "Examples/FirstProgram/migrations/0001_create_books.sql"

    @Test func theREADMEsFirstProgramIsTheExampleTarget() throws {
        let blocks = try codeBlocks("README.md")
        #expect(blocks.contains { $0.language == "sql" && $0.code == (try? text(migration)) })
        #expect(blocks.contains { $0.language == "swift" && $0.code == (try? text(program)) })
    }

    @Test func theTutorialsCodeIsCompiledAndRun() throws {
        let blocks = try codeBlocks("Sources/StructPostgres/StructPostgres.docc/FromAnEmptyFolder.md")
        #expect(blocks.contains { $0.language == "sql" && $0.code == (try? text(migration)) })
        #expect(blocks.contains { $0.language == "swift" && $0.code == (try? text(program)) })
        let tests = try text("Tests/StructPostgresIntegrationTests/FirstProgramTests.swift")
        let region = try #require(tests.firstMatch(of: /\/\/ tutorial: begin\n((?s).*?)    \/\/ tutorial: end/)?.output.1)
        let dedented = region.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("    ") ? $0.dropFirst(4) : $0 }.joined(separator: "\n")
        #expect(blocks.contains { $0.language == "swift" && $0.code.hasSuffix(dedented) }, "the tutorial shows FirstProgramTests' test")
    }
}
