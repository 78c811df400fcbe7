import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Place: Codable, Sendable {
    var code: String
    var city: String
}

private struct Shop: StoredModel {
    static let table = "shops"
    var uuid: UUID
    var place: Place
    var name: String
    var label: String { name.uppercased() }
}

/// Typed filters and sort keys name a column only for a stored property of the entity itself.
@Suite struct KeyPathNamesTests {
    @Test func storedPropertiesNameTheirField() throws {
        #expect(try KeyPathNames.name(of: \Shop.uuid) == "uuid")
        #expect(try KeyPathNames.name(of: \Shop.place) == "place")
        #expect(try KeyPathNames.name(of: \Shop.name) == "name")
    }

    /// `\.place.code` starts where `place` does: without comparing types it would read as `place`.
    @Test func aPathIntoAPropertysFieldsOrAComputedPropertyIsRefusedByName() {
        for (keyPath, text) in [
            (\Shop.place.code as PartialKeyPath<Shop>, "place.code"), (\Shop.place.city, "place.city"), (\Shop.label, "label"),
        ] {
            let error = #expect(throws: StructPostgresError.self) { try Self.name(keyPath) }
            #expect(error?.code == .undefinedColumn)
            #expect(error?.message.contains("is not a stored property of Shop") == true, "\(text)")
        }
    }

    @Test func aTypedFilterOrSortKeyOnSuchAPathFailsWhenUsed() {
        let filter = (\Shop.place.code == "x").filter
        guard case .invalid(let error) = filter.node else {
            Issue.record("the filter compiled to \(filter.node)")
            return
        }
        #expect(error.message.contains("\\Shop.place.code"))
        #expect(filter.keys.isEmpty)
        let sort = SortKey.ascending(\Shop.place.city)
        #expect(sort.key != "place")
    }

    private static func name(_ keyPath: PartialKeyPath<Shop>) throws -> String {
        switch keyPath {
        case let path as KeyPath<Shop, String>: try KeyPathNames.name(of: path)
        case let path as KeyPath<Shop, Place>: try KeyPathNames.name(of: path)
        default: throw StructPostgresError(.client, "unexpected key path")
        }
    }
}
