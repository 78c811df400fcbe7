import Foundation
import StructPostgres

/// Creates the book-store schema from `migrations/` when it is missing.
///
/// This applies the `-- migrate:up` part of each file in name order, without a history table;
/// the migrator of the library (issue 3) takes over from it.
enum SchemaSetup {
    static func applyMigrations(in directory: URL, to service: PostgresService) async throws {
        let exists = try await service.query("SELECT to_regclass('public.books') IS NOT NULL")[0].decode(Bool.self)
        guard !exists else {
            print("Schema present; migrations already applied.")
            return
        }
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            let up = text.components(separatedBy: "-- migrate:down")[0]
            try await service.execute(unsafeSQL: up)
            print("Applied \(file.lastPathComponent)")
        }
    }
}
