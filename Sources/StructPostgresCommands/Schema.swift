import ArgumentParser
import Foundation
import StructPostgres

/// `schema verify`: the app's models against the database's schema.
struct Schema: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the app's models against the database's schema (from the app's own executable).",
        subcommands: [Verify.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compare every model with the tables it is stored in: exit 0 when they agree, 1 listing every mismatch.")
        @OptionGroup var connection: ConnectionOptions
        @Flag(help: "Print JSON instead of one line per mismatch.") var json = false

        func run() async throws {
            var report: SchemaReport?
            try await reportingFailures {
                let models = try StructPG.requireModels(for: "schema verify")
                try await withService(connection) { service in report = try await service.schemaReport(for: models) }
            }
            guard let report else { return }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(ReportJSON(report)), as: UTF8.self))
            } else {
                print(report.matches ? "The models agree with the database's schema." : report.description)
            }
            if !report.matches { throw ExitCode.failure }
        }
    }

    /// `--json`'s shape: `{"matches": false, "mismatches": [{"kind": "missingColumn", "model": ..., ...}]}`.
    private struct ReportJSON: Encodable {
        struct Mismatch: Encodable {
            let kind: String
            let model: String
            let property: String?
            let table: String
            let column: String?
            let message: String
        }
        let matches: Bool
        let mismatches: [Mismatch]

        init(_ report: SchemaReport) {
            matches = report.matches
            mismatches = report.mismatches.map {
                Mismatch(
                    kind: $0.kind.rawValue, model: $0.entity, property: $0.property, table: $0.table, column: $0.column, message: $0.message
                )
            }
        }
    }
}

extension StructPG {
    /// The app's models, or a failure that says where the model commands run.
    static func requireModels(for command: String) throws -> [any EntityConvertible.Type] {
        guard models.isEmpty else { return models }
        throw StructPostgresError(
            .invalidConfiguration,
            "`\(command)` needs the app's models, which the structpg binary cannot see: run it from the app's own executable, whose main calls `StructPG.main(models: [...])` (import StructPostgresCommands)"
        )
    }
}
