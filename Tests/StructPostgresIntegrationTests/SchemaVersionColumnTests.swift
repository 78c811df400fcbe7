import Foundation
import StructPostgres
import Testing

private struct Ticket: StoredModel {
    static let table = "tickets"
    static let versionKey: String? = "version"
    var uuid: UUID
    var title: String
    var version: Int
}

/// The same ticket, a version later: its writes become conditional.
private struct TicketBefore: StoredModel {
    static let table = "tickets"
    var uuid: UUID
    var title: String
}

private struct MisnamedVersion: StoredModel {
    static let table = "tickets"
    static let versionKey: String? = "revision"
    var uuid: UUID
    var title: String
}

/// `verifySchema` and `draftMigration` know a version column: `integer NOT NULL DEFAULT 1`.
@Suite struct SchemaVersionColumnTests {
    @Test func aNewTableIsDraftedWithItsVersionColumnAndThenMatches() async throws {
        try await withTables { service, _ in
            let draft = try await service.draftMigration(for: [Ticket.self])
            #expect(draft.up.joined().contains(#""version" integer NOT NULL DEFAULT 1"#), "\(draft.up)")
            try await DraftHarness(service).apply(draft)
            #expect(try await service.schemaReport(for: [Ticket.self]).matches)
            let ticket = Ticket(uuid: UUID(), title: "a", version: 0)
            #expect(try await service.update(entities: [ticket]).version(of: ticket) == 1)
        }
    }

    @Test func aVersionAddedToATableWithRowsStartsThemAtOne() async throws {
        try await withTables("CREATE TABLE tickets (uuid uuid PRIMARY KEY, title text NOT NULL)") { service, _ in
            let old = TicketBefore(uuid: UUID(), title: "old")
            try await service.update(entities: [old])
            let report = try await service.schemaReport(for: [Ticket.self])
            #expect(report.mismatches.map(\.kind) == [.missingColumn])
            let draft = try await service.draftMigration(for: [Ticket.self])
            #expect(draft.up == [#"ALTER TABLE "tickets" ADD COLUMN "version" integer NOT NULL DEFAULT 1;"#])
            #expect(draft.reviews.isEmpty, "the default fills the rows there: nothing to review")
            try await DraftHarness(service).apply(draft)
            #expect(try await service.schemaReport(for: [Ticket.self]).matches)
            #expect(try await service.find(Ticket.self, id: old.uuid)?.version == 1)
        }
    }

    @Test(arguments: [
        ("version integer", ["NOT NULL", "DEFAULT 1"]),
        ("version integer NOT NULL", ["DEFAULT 1"]),
        ("version bigint NOT NULL DEFAULT 2", ["DEFAULT 1"]),
        ("version numeric NOT NULL DEFAULT 1", ["integer"]),
    ])
    func aVersionColumnThatLacksSomethingIsReportedAndDrafted(column: String, missing: [String]) async throws {
        try await withTables("CREATE TABLE tickets (uuid uuid PRIMARY KEY, title text NOT NULL, \(column))") { service, _ in
            let report = try await service.schemaReport(for: [Ticket.self])
            let mismatch = report.mismatches.first { $0.kind == .versionColumn }
            #expect(mismatch?.column == "version" && mismatch?.property == "version", "\(report)")
            #expect(mismatch?.message.contains("is not \(missing.joined(separator: ", "))") == true, "\(report)")
            let verify = await #expect(throws: StructPostgresError.self) { try await service.verifySchema(of: [Ticket.self]) }
            #expect(verify?.code == .schemaMismatch)
            let draft = try await service.draftMigration(for: [Ticket.self])
            if missing == ["integer"] {
                #expect(draft.files.isEmpty && draft.reviews.count == 1, "a type change is for review: \(draft.up)")
                return
            }
            try await DraftHarness(service).apply(draft)
            #expect(try await service.schemaReport(for: [Ticket.self]).matches, "\(draft.up)")
        }
    }

    @Test func aVersionKeyThatNamesNoPropertyIsReported() async throws {
        try await withTables("CREATE TABLE tickets (uuid uuid PRIMARY KEY, title text NOT NULL, version integer NOT NULL DEFAULT 1)") {
            service, _ in
            let report = try await service.schemaReport(for: [MisnamedVersion.self])
            #expect(report.mismatches.map(\.kind) == [.versionColumn], "\(report)")
            #expect(report.mismatches.first?.property == "revision")
        }
    }
}
