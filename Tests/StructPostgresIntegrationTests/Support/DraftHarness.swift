import Foundation
import StructPostgres
import Synchronization

/// Drafts applied as the next migrations of one database, as `migrate draft` then `migrate up` would.
final class DraftHarness {
    let service: PostgresService
    private(set) var migrations: [Migration] = []

    init(_ service: PostgresService) { self.service = service }

    /// Applies the draft's files as the next migrations; returns their text.
    @discardableResult
    func apply(_ draft: MigrationDraft) async throws -> String {
        for text in draft.files {
            let version = migrations.count + 1
            migrations.append(try Migration(fileName: String(format: "%04d_draft.sql", version), text: text))
        }
        try await Migrator(service: service, migrations: try MigrationSet(migrations)).migrate()
        return draft.files.joined(separator: "\n")
    }

    /// Drafts `models`, applies the draft, and returns its text.
    @discardableResult
    func draftAndApply(_ models: [any EntityConvertible.Type]) async throws -> String {
        try await apply(try await service.draftMigration(for: models))
    }
}

/// A dynamic model type for `shape`, made fresh for the test at `depth` (see ``withFreshTag(_:_:)``).
struct WithModel<Result>: WithFreshTag {
    let shapes: [ModelShape]
    let body: ([any EntityConvertible.Type]) async throws -> Result

    init(_ shapes: ModelShape..., body: @escaping ([any EntityConvertible.Type]) async throws -> Result) {
        self.shapes = shapes
        self.body = body
    }

    func run<Tag: TypeTag>(_ tag: Tag.Type) async throws -> Result {
        DynamicModel<Tag, RoleA>.register(shapes[0])
        var types: [any EntityConvertible.Type] = [DynamicModel<Tag, RoleA>.self]
        if shapes.count > 1 {
            DynamicModel<Tag, RoleB>.register(shapes[1])
            types.append(DynamicModel<Tag, RoleB>.self)
        }
        return try await body(types)
    }
}

/// Distinct depths for the tests of a process that make dynamic models, so no two share a type.
enum FreshDepth {
    private static let next = Mutex(1)
    static func take(_ count: Int = 1) -> Int {
        next.withLock { value in
            defer { value += count }; return value
        }
    }
}
