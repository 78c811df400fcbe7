import Foundation
import StructPostgresCore
import StructPostgresDriver

/// The migrations of an app, sorted by version, checked for duplicate versions.
///
/// ```swift
/// let migrations = try MigrationSet(directory: URL(fileURLWithPath: "migrations"))
/// let bundled = try MigrationSet(bundle: .module, subdirectory: "migrations")
/// ```
public struct MigrationSet: Sendable {
    /// The migrations, sorted by version.
    public let migrations: [Migration]

    /// - Throws: ``StructPostgresError`` `migrationRefused` for a malformed file, or two files of one version.
    public init(_ migrations: [Migration]) throws {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw StructPostgresError.refused(
                "two migrations have version \(next.version): \(previous.fileName) and \(next.fileName)", file: next.fileName)
        }
        self.migrations = sorted
    }

    /// Every `.sql` file of a directory (other files are ignored).
    public init(directory: URL) throws {
        let files: [URL]
        do {
            files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        } catch {
            throw StructPostgresError.refused("cannot read the migrations directory '\(directory.path)': \(error.localizedDescription)")
        }
        try self.init(
            try files.filter { $0.pathExtension == "sql" }.map { url in
                let text: String
                do {
                    text = try String(contentsOf: url, encoding: .utf8)
                } catch {
                    throw StructPostgresError.refused("cannot read \(url.lastPathComponent) as UTF-8 text", file: url.lastPathComponent)
                }
                return try Migration(fileName: url.lastPathComponent, text: text)
            })
    }

    /// The `.sql` resources of a bundle, e.g. `Bundle.module` with `resources: [.copy("migrations")]`.
    public init(bundle: Bundle, subdirectory: String? = "migrations") throws {
        guard let resources = bundle.resourceURL else {
            throw StructPostgresError.refused("the bundle at \(bundle.bundleURL.path) has no resources")
        }
        try self.init(directory: subdirectory.map { resources.appendingPathComponent($0) } ?? resources)
    }

    /// The migration of `version`, if the set has one.
    public subscript(version: Int64) -> Migration? { migrations.first { $0.version == version } }
}
