import Foundation
import StructPostgres
import Testing

/// Shelves keyed by `bigint`, boxes pointing at them through an `integer` column: the two sides of each link
/// have different types, so the loaded rows carry the link cast to the source column's type.
private struct Shelf: StoredModel, Equatable {
    static let table = "shelves"
    static let uniqueKey = ["id"]
    static let relationships: [Relationship<Self>] = [.toMany("boxes", \.$boxes, orderedBy: [.ascending("label")])]
    var id: Int64
    var label: String
    @Related var boxes: [Box]
}

private struct Box: StoredModel, Equatable {
    static let table = "boxes"
    static let uniqueKey = ["id"]
    static let relationships: [Relationship<Self>] = [.toOne("shelf", \.$shelf)]
    var id: Int64
    var shelfID: Int32?
    var label: String
    @Related var shelf: Shelf?
}

@Suite struct RelationshipLinkTypeTests {
    private let ddl = [
        "CREATE TABLE shelves (id bigint PRIMARY KEY, label text NOT NULL)",
        "CREATE TABLE boxes (id bigint PRIMARY KEY, shelf_id integer REFERENCES shelves (id), label text NOT NULL)",
    ]

    @Test func linksBetweenColumnsOfDifferentTypesLoadBothWays() async throws {
        try await withTables(ddl[0], ddl[1], pool: PoolOptions(maxConnections: 1)) { service, _ in
            let shelves = [Shelf(id: 10, label: "ten"), Shelf(id: 20, label: "twenty"), Shelf(id: 30, label: "empty")]
            try await service.update(entities: shelves)
            let boxes = [
                Box(id: 1, shelfID: 10, label: "b"), Box(id: 2, shelfID: 20, label: "c"),
                Box(id: 3, shelfID: 10, label: "a"), Box(id: 4, shelfID: nil, label: "loose"),
            ]
            try await service.update(entities: boxes)

            let loaded = try await service.fetch(Shelf.self, sortedBy: [.ascending("id")], loading: .only("boxes"))
            #expect(loaded.map(\.label) == ["ten", "twenty", "empty"])
            #expect(loaded.map { $0.boxes.map(\.label) } == [["a", "b"], ["c"], []])
            #expect(loaded.allSatisfy { $0.$boxes.isLoaded })

            for _ in 0..<6 {
                let withShelves = try await service.fetch(Box.self, sortedBy: [.ascending("id")], loading: .only("shelf"))
                #expect(withShelves.map { $0.shelf?.label } == ["ten", "twenty", "ten", nil])
            }
            // Loading matches a set of keys (`= ANY($1)`): planned for each set, never prepared (see PreparedStatementTests).
            let prepared = try await service.query("SELECT count(*) FROM pg_prepared_statements WHERE strpos(statement, '= ANY(') > 0")
            #expect(try prepared[0].decode(Int64.self) == 0)
        }
    }
}
