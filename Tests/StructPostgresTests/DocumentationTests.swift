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

    /// Every snippet that adds the library to a package says it the README's way: a checkout next to the package,
    /// until a release exists (no placeholder URL, no version that was never tagged).
    @Test func everyInstallSnippetIsTheREADMEs() throws {
        let readme = try #require(
            try codeBlocks("README.md").flatMap { $0.code.split(separator: "\n") }
                .first { $0.contains(".package(") && $0.contains("StructPostgres") }
        ).trimmingCharacters(in: .whitespaces)
        #expect(readme == #".package(path: "../StructPostgres"),"#)
        let catalog = root.appendingPathComponent("Sources/StructPostgres/StructPostgres.docc")
        let articles = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasSuffix(".md") }
            .map { "Sources/StructPostgres/StructPostgres.docc/" + $0 }
        var found = 0
        for path in ["README.md"] + articles {
            for line in try codeBlocks(path).flatMap({ $0.code.split(separator: "\n") }) where line.contains(".package(") {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard trimmed.contains("StructPostgres") || trimmed.contains("OWNER") else { continue }
                found += 1
                #expect(trimmed == readme, "\(path): \(trimmed)")
            }
            let prose = try text(path)
            for mention in prose.matches(of: /\.package\(url: "([^"]*)", from: "([^"]*)"\)/) where !prose.isEmpty {
                #expect(
                    mention.output.1 == "<its repository URL>" && mention.output.2 == "<a released version>", "\(path): \(mention.output.0)"
                )
            }
        }
        #expect(found >= 3, "the README, the tutorial and Getting Started each add the package")
    }
}
