import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

/// Text is stored and bound composed (NFC), so that PostgreSQL's code-point comparison agrees with Swift's canonical
/// equivalence. `ColumnValue.text` compares its strings with `==`, which is canonical equivalence itself, so these
/// tests compare scalars.
@Suite struct TextNormalizationTests {
    private enum Shelf: String, Codable, Sendable { case café = "Cafe\u{301}" }

    private struct Book: StoredModel {
        static let table = "books"
        var uuid = UUID()
        var title: String
        var subtitle: String?
        var tags: [String]
        var shelf: Shelf
        var note: Note
    }

    /// A `Codable` value that encodes as a single string.
    private struct Note: Codable, Sendable {
        let text: String
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
        init(_ text: String) { self.text = text }
        init(from decoder: any Decoder) throws { text = try decoder.singleValueContainer().decode(String.self) }
    }

    private func scalars(_ value: ColumnValue) -> [UInt32] {
        switch value {
        case .text(let text): text.unicodeScalars.map(\.value)
        case .array(let elements, _): elements.flatMap(scalars)
        default: []
        }
    }

    private func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    @Test func normalizeComposesAndKeepsWhatIsComposed() {
        #expect(scalars(NFC.normalize("Cafe\u{301}")) == scalars("Caf\u{E9}"))
        #expect(scalars(NFC.normalize("\u{212B}ngstro\u{308}m")) == scalars("\u{C5}ngstr\u{F6}m"), "ANGSTROM SIGN is a singleton")
        #expect(scalars(NFC.normalize("\u{1112}\u{1161}\u{11AB}")) == [0xD55C], "Hangul jamo compose to a syllable")
        #expect(scalars(NFC.normalize("a\u{301}\u{323}")) == [0x1EA1, 0x301], "marks reorder by combining class")
        #expect(scalars(NFC.normalize("q\u{301}")) == [0x71, 0x301], "no precomposed q with acute")
        #expect(scalars(NFC.normalize("\u{10041}\u{301}")) == [0x10041, 0x301], "a scalar beyond the BMP stays itself")
        for composed in [
            "", "Dune", "Caf\u{E9} \u{C5}ngstr\u{F6}m", "\u{D55C}\u{AD6D}\u{C5B4}", "👍🏽", "🇫🇷", String(repeating: "x", count: 100),
        ] {
            #expect(scalars(NFC.normalize(composed)) == scalars(composed))
            #expect(NFC.isNormalizedWithoutComposing(composed) || !composed.unicodeScalars.allSatisfy { $0.value < 0x300 })
        }
        #expect(!NFC.isNormalizedWithoutComposing("Cafe\u{301}"))
        #expect(NFC.isNormalizedWithoutComposing("Caf\u{E9}"), "Latin-1 takes the fast path")
    }

    /// Every way a `String` reaches a row: a property, an optional, an array element, an enum's raw value, and a
    /// `Codable` value that encodes as a string.
    @Test func stringsAreStoredComposed() throws {
        let book = Book(
            title: "Cafe\u{301}", subtitle: "A\u{30A}ngstro\u{308}m", tags: ["nai\u{308}ve", "plain"], shelf: .café,
            note: Note("\u{1100}\u{1161}"))
        let row = try RowEncoder(naming: .snakeCase).encode(book)
        let values = Dictionary(uniqueKeysWithValues: zip(row.columns, row.values))
        #expect(scalars(values["title"]!) == scalars("Caf\u{E9}"))
        #expect(scalars(values["subtitle"]!) == scalars("\u{C5}ngstr\u{F6}m"))
        #expect(scalars(values["tags"]!) == scalars("na\u{EF}veplain"))
        #expect(scalars(values["shelf"]!) == scalars("Caf\u{E9}"))
        #expect(scalars(values["note"]!) == [0xAC00])
        // A batch collects columns through the same encoder.
        let collector = RowEncoder.ColumnCollector(
            naming: .snakeCase, shape: .init(columns: row.columns, properties: row.properties), prefix: nil, capacity: 1)
        #expect(try collector.append(book))
        let titles = collector.columns[row.columns.firstIndex(of: "title")!]
        #expect(titles.map(scalars) == [scalars("Caf\u{E9}")])
    }

    @Test func filterValuesAreBoundComposed() throws {
        #expect(scalars(try RowEncoder.columnValue(of: "Cafe\u{301}", property: "title")) == scalars("Caf\u{E9}"))
        let optional: String? = "Cafe\u{301}"
        #expect(scalars(try RowEncoder.columnValue(of: optional, property: "title")) == scalars("Caf\u{E9}"))
        #expect(scalars(try RowEncoder.columnValue(of: ["Cafe\u{301}"], property: "title")) == scalars("Caf\u{E9}"))
    }
}
