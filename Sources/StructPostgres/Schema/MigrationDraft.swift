import StructPostgresCore
import StructPostgresDriver

/// The migration a model change needs, drafted for review from the comparison of ``SchemaReport``: what can be
/// added safely is DDL, what must never be automatic (a type change, a dropped or renamed property) is a `-- review:`
/// line that says why. Nothing it drafts drops or rewrites data.
///
/// ```swift
/// let draft = try await service.draftMigration(for: [BookModel.self, ReviewModel.self])
/// for file in draft.files { print(file) }
/// ```
public struct MigrationDraft: Sendable {
    /// Statements and `-- review:` lines of the up part, in order.
    public let up: [String]
    /// Lines of the down part: every undo that would lose data is a `-- review:` line.
    public let down: [String]
    /// Statements that cannot run in a transaction (`CREATE UNIQUE INDEX CONCURRENTLY`): a migration of their own,
    /// marked `transaction:false`.
    public let concurrentUp: [String]
    /// The down part of the concurrent migration.
    public let concurrentDown: [String]

    /// Whether the models need no change of the schema.
    public var isEmpty: Bool { up.isEmpty && concurrentUp.isEmpty }

    /// The migration files' contents, in the format ``MigrationSet`` reads: the transactional migration, then the
    /// concurrent one when there is one. A part that holds only `-- review:` lines is no file (the migrator would
    /// refuse it): its lines are in ``reviews``.
    public var files: [String] {
        var files: [String] = []
        if Self.holdsStatement(up) { files.append(Self.file(up: up, down: down, transactional: true)) }
        if Self.holdsStatement(concurrentUp) { files.append(Self.file(up: concurrentUp, down: concurrentDown, transactional: false)) }
        return files
    }

    /// The `-- review:` lines of the up parts: what needs a decision before (or instead of) applying ``files``.
    public var reviews: [String] {
        (up + concurrentUp).flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0.hasPrefix("-- review:") }
    }

    private static func holdsStatement(_ lines: [String]) -> Bool {
        lines.contains { $0.split(separator: "\n").contains { !$0.hasPrefix("--") && !$0.allSatisfy(\.isWhitespace) } }
    }

    private static func file(up: [String], down: [String], transactional: Bool) -> String {
        let option = transactional ? "" : " transaction:false"
        return "-- migrate:up\(option)\n" + up.joined(separator: "\n") + "\n\n-- migrate:down\(option)\n"
            + (down.isEmpty ? "-- review: nothing to undo" : down.joined(separator: "\n")) + "\n"
    }
}
