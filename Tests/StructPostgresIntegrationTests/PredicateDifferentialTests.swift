import Foundation
import StructPostgres
import Testing

/// A book whose title mixes composed and decomposed forms of the same words, and whose prices hold NaN,
/// infinities and -0.0.
struct ShelfBook: StoredModel {
    static let table = "shelf_books"
    var uuid: UUID
    var title: String
    var subtitle: String?
    var price: Double
    var discount: Double?

    static let create = """
        CREATE TABLE shelf_books (uuid uuid PRIMARY KEY, title text NOT NULL, subtitle text,
                                  price double precision NOT NULL, discount double precision)
        """
}

/// A `#Predicate` must return the rows Swift's own `predicate.evaluate` keeps, or be refused by name: PostgreSQL
/// compares code points and orders NaN above every number, Swift compares Characters by canonical equivalence and
/// NaN with nothing.
@Suite struct PredicateDifferentialTests {
    /// Words in composed and decomposed forms, Hangul as syllables and as jamo, emoji with modifiers and joiners,
    /// flags, Indic conjuncts, marks with no precomposed form, and scalars that only continue the word before them.
    static let words = [
        "Caf\u{E9}", "Cafe\u{301}", "Cafe", "cafe", "Caf", "\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m", "\u{212B}ngstr\u{F6}m",
        "na\u{EF}ve", "nai\u{308}ve", "\u{D55C}\u{AD6D}\u{C5B4}", "\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}\u{110B}\u{1165}",
        "\u{1F44D}\u{1F3FD}", "\u{1F44D}", "\u{2764}\u{FE0F}", "\u{2764}", "\u{1F1EB}\u{1F1F7}",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
        "q\u{301}uiz", "quiz", "e\u{301}\u{323}", "\u{1EB9}\u{301}", "\u{915}\u{94D}\u{937}", "\u{915}\u{93F}", "\u{301}", "\u{1F3FD}",
        "Dune", "The Hobbit", "50% off_", "a\r\nb", "\u{1F4DA}", "\u{1F44D}\u{1F3FD}\u{200D}\u{1F4DA}", "\u{1F1E6}\u{1F1EB}\u{1F1F7}",
    ]
    static let prices: [Double] = [.nan, .infinity, -.infinity, -0.0, 0, 100, 100.0.nextUp, 99.5, 150, -5, 1e300, .leastNonzeroMagnitude]

    /// Every word alone first, then random titles of one to three words, joined by nothing, a space or a dash (so a
    /// word may continue the Character the one before it ends with).
    static func books(count: Int, seed: UInt64) -> [ShelfBook] {
        var random = SplitMix64(seed: seed)
        func word() -> String { words.randomElement(using: &random)! }
        return (0..<count).map { index in
            var title = index < words.count ? words[index] : word()
            if index >= words.count {
                for _ in 0..<Int.random(in: 0...2, using: &random) { title += ["", " ", "-"].randomElement(using: &random)! + word() }
            }
            let subtitle = Bool.random(using: &random) ? nil : word()
            let discount = Int.random(in: 0..<3, using: &random) == 0 ? nil : prices.randomElement(using: &random)!
            return ShelfBook(uuid: UUID(), title: title, subtitle: subtitle, price: prices[index % prices.count], discount: discount)
        }
    }

    enum Expectation {
        case agrees
        /// Refused with `unsupportedPredicate`, the message saying this.
        case refused(String)
    }

    static let cases: [(String, Predicate<ShelfBook>, Expectation)] = {
        let nan = Double.nan
        let infinity = Double.infinity
        let negativeInfinity = -Double.infinity
        let negativeZero = -0.0
        let decomposed = "Cafe\u{301}"
        let jamo = "\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}\u{110B}\u{1165}"
        let angstrom = "A\u{30A}ngstro\u{308}m"
        let list = [nan, 100]
        return [
            ("title == Café (composed)", #Predicate<ShelfBook> { $0.title == "Caf\u{E9}" }, .agrees),
            ("title == Café (decomposed)", #Predicate<ShelfBook> { $0.title == decomposed }, .agrees),
            ("title == Ångström (decomposed)", #Predicate<ShelfBook> { $0.title == angstrom }, .agrees),
            ("title == 한국어 (jamo)", #Predicate<ShelfBook> { $0.title == jamo }, .agrees),
            ("title != Café", #Predicate<ShelfBook> { $0.title != "Caf\u{E9}" }, .agrees),
            ("!(title == Café decomposed)", #Predicate<ShelfBook> { !($0.title == decomposed) }, .agrees),
            ("title < Café", #Predicate<ShelfBook> { $0.title < "Caf\u{E9}" }, .agrees),
            ("title >= Café (decomposed)", #Predicate<ShelfBook> { $0.title >= decomposed }, .agrees),
            ("title contains é", #Predicate<ShelfBook> { $0.title.contains("\u{E9}") }, .agrees),
            ("title contains e + U+0301", #Predicate<ShelfBook> { $0.title.contains("e\u{301}") }, .agrees),
            ("title contains e", #Predicate<ShelfBook> { $0.title.contains("e") }, .agrees),
            ("title contains Cafe", #Predicate<ShelfBook> { $0.title.contains("Cafe") }, .agrees),
            ("title contains Caf", #Predicate<ShelfBook> { $0.title.contains("Caf") }, .agrees),
            ("title contains ö", #Predicate<ShelfBook> { $0.title.contains("\u{F6}") }, .agrees),
            ("title contains o", #Predicate<ShelfBook> { $0.title.contains("o") }, .agrees),
            ("title contains 국", #Predicate<ShelfBook> { $0.title.contains("\u{AD6D}") }, .agrees),
            ("title contains q", #Predicate<ShelfBook> { $0.title.contains("q") }, .agrees),
            ("title contains quiz", #Predicate<ShelfBook> { $0.title.contains("quiz") }, .agrees),
            ("title contains \\n", #Predicate<ShelfBook> { $0.title.contains("\n") }, .agrees),
            ("title contains 50% off_", #Predicate<ShelfBook> { $0.title.contains("50% off_") }, .agrees),
            ("title contains e-Dune", #Predicate<ShelfBook> { $0.title.contains("e-Dune") }, .agrees),
            ("title contains nothing", #Predicate<ShelfBook> { $0.title.contains("") }, .agrees),
            ("!(title contains é)", #Predicate<ShelfBook> { !$0.title.contains("\u{E9}") }, .agrees),
            ("title starts with Cafe", #Predicate<ShelfBook> { $0.title.starts(with: "Cafe") }, .agrees),
            ("title starts with Café (decomposed)", #Predicate<ShelfBook> { $0.title.starts(with: decomposed) }, .agrees),
            ("title starts with Caf", #Predicate<ShelfBook> { $0.title.starts(with: "Caf") }, .agrees),
            ("title starts with q", #Predicate<ShelfBook> { $0.title.starts(with: "q") }, .agrees),
            ("title starts with A", #Predicate<ShelfBook> { $0.title.starts(with: "A") }, .agrees),
            ("title starts with Å", #Predicate<ShelfBook> { $0.title.starts(with: "\u{C5}") }, .agrees),
            ("title starts with 👍", #Predicate<ShelfBook> { $0.title.starts(with: "\u{1F44D}") }, .agrees),
            ("title starts with ❤", #Predicate<ShelfBook> { $0.title.starts(with: "\u{2764}") }, .agrees),
            ("title starts with 👨", #Predicate<ShelfBook> { $0.title.starts(with: "\u{1F468}") }, .agrees),
            ("title starts with half a flag", #Predicate<ShelfBook> { $0.title.starts(with: "\u{1F1EB}") }, .agrees),
            ("title starts with क", #Predicate<ShelfBook> { $0.title.starts(with: "\u{915}") }, .agrees),
            ("title starts with a leading jamo", #Predicate<ShelfBook> { $0.title.starts(with: "\u{1112}") }, .agrees),
            ("title starts with 한", #Predicate<ShelfBook> { $0.title.starts(with: "\u{D55C}") }, .agrees),
            ("title starts with a + CR", #Predicate<ShelfBook> { $0.title.starts(with: "a\r") }, .agrees),
            ("title starts with a combining acute", #Predicate<ShelfBook> { $0.title.starts(with: "\u{301}") }, .agrees),
            ("subtitle contains é ?? false", #Predicate<ShelfBook> { $0.subtitle?.contains("\u{E9}") ?? false }, .agrees),
            ("subtitle starts with Caf ?? true", #Predicate<ShelfBook> { $0.subtitle?.starts(with: "Caf") ?? true }, .agrees),
            ("subtitle == Café (decomposed)", #Predicate<ShelfBook> { $0.subtitle == decomposed }, .agrees),
            ("subtitle != Café", #Predicate<ShelfBook> { $0.subtitle != "Caf\u{E9}" }, .agrees),
            ("subtitle == nil", #Predicate<ShelfBook> { $0.subtitle == nil }, .agrees),
            ("title contains 👍", #Predicate<ShelfBook> { $0.title.contains("\u{1F44D}") }, .agrees),
            ("title contains ❤", #Predicate<ShelfBook> { $0.title.contains("\u{2764}") }, .agrees),
            ("title contains 📚", #Predicate<ShelfBook> { $0.title.contains("\u{1F4DA}") }, .agrees),
            ("title contains a flag", #Predicate<ShelfBook> { $0.title.contains("\u{1F1EB}\u{1F1F7}") }, .agrees),
            ("title contains half a flag", #Predicate<ShelfBook> { $0.title.contains("\u{1F1EB}") }, .agrees),
            ("title starts with 👨 + ZWJ", #Predicate<ShelfBook> { $0.title.starts(with: "\u{1F468}\u{200D}") }, .agrees),
            (
                "title contains U+0301", #Predicate<ShelfBook> { $0.title.contains("\u{301}") },
                .refused("it begins with U+0301, a combining mark")
            ),
            ("title contains ष", #Predicate<ShelfBook> { $0.title.contains("\u{937}") }, .refused("an Indic consonant")),
            ("title.count > 4", #Predicate<ShelfBook> { $0.title.count > 4 }, .refused("counts Characters (grapheme clusters)")),
            ("price > 100", #Predicate<ShelfBook> { $0.price > 100 }, .agrees),
            ("price >= 100", #Predicate<ShelfBook> { $0.price >= 100 }, .agrees),
            ("price < 100", #Predicate<ShelfBook> { $0.price < 100 }, .agrees),
            ("price <= 100", #Predicate<ShelfBook> { $0.price <= 100 }, .agrees),
            ("price == 100", #Predicate<ShelfBook> { $0.price == 100 }, .agrees),
            ("price != 100", #Predicate<ShelfBook> { $0.price != 100 }, .agrees),
            ("!(price > 100)", #Predicate<ShelfBook> { !($0.price > 100) }, .agrees),
            ("price > 100 || price < 0", #Predicate<ShelfBook> { $0.price > 100 || $0.price < 0 }, .agrees),
            ("price == nan", #Predicate<ShelfBook> { $0.price == nan }, .agrees),
            ("price != nan", #Predicate<ShelfBook> { $0.price != nan }, .agrees),
            ("price > nan", #Predicate<ShelfBook> { $0.price > nan }, .agrees),
            ("price < nan", #Predicate<ShelfBook> { $0.price < nan }, .agrees),
            ("price >= nan", #Predicate<ShelfBook> { $0.price >= nan }, .agrees),
            ("nan <= price", #Predicate<ShelfBook> { nan <= $0.price }, .agrees),
            ("!(price > nan)", #Predicate<ShelfBook> { !($0.price > nan) }, .agrees),
            ("!(price == nan)", #Predicate<ShelfBook> { !($0.price == nan) }, .agrees),
            ("price == 0 (and -0.0)", #Predicate<ShelfBook> { $0.price == 0 }, .agrees),
            ("price == -0.0", #Predicate<ShelfBook> { $0.price == negativeZero }, .agrees),
            ("price < 0", #Predicate<ShelfBook> { $0.price < 0 }, .agrees),
            ("price > -infinity", #Predicate<ShelfBook> { $0.price > negativeInfinity }, .agrees),
            ("price < infinity", #Predicate<ShelfBook> { $0.price < infinity }, .agrees),
            ("price >= infinity", #Predicate<ShelfBook> { $0.price >= infinity }, .agrees),
            ("[nan, 100].contains(price)", #Predicate<ShelfBook> { list.contains($0.price) }, .agrees),
            ("discount == nil", #Predicate<ShelfBook> { $0.discount == nil }, .agrees),
            ("discount == nan", #Predicate<ShelfBook> { $0.discount == nan }, .agrees),
            ("discount != nan", #Predicate<ShelfBook> { $0.discount != nan }, .agrees),
            ("!(discount == nan)", #Predicate<ShelfBook> { !($0.discount == nan) }, .agrees),
            ("discount != nil && discount! > 10", #Predicate<ShelfBook> { $0.discount != nil && $0.discount! > 10 }, .agrees),
            ("discount == nil || discount! <= 10", #Predicate<ShelfBook> { $0.discount == nil || $0.discount! <= 10 }, .agrees),
        ]
    }()

    @Test func everyPredicateAgreesWithSwiftOrIsRefusedByName() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        let books = Self.books(count: 300, seed: seed)
        try await withTables(ShelfBook.create) { service, _ in
            try await service.update(entities: books)
            let stored = try await service.query(
                "SELECT count(*) FROM shelf_books WHERE title IS NOT NFC NORMALIZED OR subtitle IS NOT NFC NORMALIZED")
            #expect(try stored[0].decode(Int64.self) == 0, "every string is stored composed")
            var informative = 0
            for (name, predicate, expectation) in Self.cases {
                switch expectation {
                case .agrees:
                    let want = Set(try books.filter { try predicate.evaluate($0) }.map(\.uuid))
                    let fetched = try await service.fetch(ShelfBook.self, where: .predicate(predicate))
                    let got = Set(fetched.map(\.uuid))
                    let (sqlAlone, swiftAlone) = (got.subtracting(want), want.subtracting(got))
                    #expect(
                        sqlAlone.isEmpty && swiftAlone.isEmpty,
                        "\(name) (seed \(seed)): SQL alone \(Self.titles(sqlAlone, books)), Swift alone \(Self.titles(swiftAlone, books))")
                    let counted = try await service.count(ShelfBook.self, where: .predicate(predicate))
                    #expect(counted == want.count, "count: \(name)")
                    if !want.isEmpty && want.count < books.count { informative += 1 }
                case .refused(let reason):
                    let error = await #expect(throws: StructPostgresError.self, "\(name)") {
                        try await service.fetch(ShelfBook.self, where: .predicate(predicate))
                    }
                    #expect(error?.code == .unsupportedPredicate, "\(name)")
                    #expect(error?.message.contains(reason) == true, "\(name): \(error?.message ?? "no error")")
                }
            }
            #expect(informative >= 50, "most predicates keep some rows and drop others")
        }
    }

    /// Operands cut from stored titles at any scalar, so that they begin and end inside Characters as often as not:
    /// `contains`, `starts(with:)` and `ENDSWITH` must agree with Swift, or refuse by name. `SLICES=800` in the
    /// environment cuts more than the 40 operands of a routine run.
    @Test func operandsCutAnywhereAgreeOrAreRefused() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        let books = Self.books(count: 300, seed: seed)
        let operands: [String] = (0..<Self.slices).map { _ in
            let scalars = Array(books.randomElement(using: &random)!.title.unicodeScalars)
            let start = Int.random(in: 0..<scalars.count, using: &random)
            let end = Int.random(in: (start + 1)...min(scalars.count, start + 4), using: &random)
            var operand = ""
            operand.unicodeScalars.append(contentsOf: scalars[start..<end])
            return operand
        }
        try await withTables(ShelfBook.create) { service, _ in
            try await service.update(entities: books)
            var (agreed, refused) = (0, 0)
            for operand in operands {
                let questions: [(String, Filter, (ShelfBook) -> Bool)] = [
                    ("contains", Filter(#Predicate<ShelfBook> { $0.title.contains(operand) }), { Self.contains($0.title, operand) }),
                    ("starts(with:)", Filter(#Predicate<ShelfBook> { $0.title.starts(with: operand) }), { $0.title.starts(with: operand) }),
                    ("ENDSWITH", try Filter(format: "title ENDSWITH %@", operand), { Self.endsWith($0.title, operand) }),
                ]
                for (name, filter, expected) in questions {
                    let scalars = operand.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
                    do {
                        let got = Set(try await service.fetch(ShelfBook.self, where: EntityFilter(filter)).map(\.uuid))
                        let want = Set(books.filter(expected).map(\.uuid))
                        let (sqlAlone, swiftAlone) = (got.subtracting(want), want.subtracting(got))
                        #expect(
                            sqlAlone.isEmpty && swiftAlone.isEmpty,
                            "\(name) [\(scalars)] (seed \(seed)): SQL alone \(Self.titles(sqlAlone, books)), Swift alone \(Self.titles(swiftAlone, books))"
                        )
                        agreed += 1
                    } catch let error as StructPostgresError where error.code == .unsupportedPredicate {
                        #expect(name != "starts(with:)" || error.message.contains("it ends with"), "\(name) [\(scalars)]: \(error.message)")
                        refused += 1
                    }
                }
            }
            #expect(agreed > refused, "\(agreed) agreed, \(refused) refused")
        }
    }

    static let slices = Int(ProcessInfo.processInfo.environment["SLICES"] ?? "40")!

    /// Format strings and typed filters compile to the same `Filter`, so they follow the same rule.
    @Test func formatStringsAndTypedFiltersFollowTheSameRule() async throws {
        let books = Self.books(count: 120, seed: 7)
        let nan = Double.nan
        let questions: [(String, Filter, (ShelfBook) -> Bool)] = [
            ("price > 100", try Filter(format: "price > %@", 100.0), { $0.price > 100 }),
            ("price >= 100 (an integer)", try Filter(format: "price >= 100"), { $0.price >= 100 }),
            ("price == NaN", try Filter(format: "price == %@", nan), { _ in false }),
            ("price != NaN", try Filter(format: "price != %@", nan), { _ in true }),
            ("price BETWEEN {0, NaN}", try Filter(format: "price BETWEEN %@", [0, nan]), { _ in false }),
            ("price BETWEEN {-1, 100}", try Filter(format: "price BETWEEN {-1, 100}"), { $0.price >= -1 && $0.price <= 100 }),
            ("price IN {NaN, 100}", try Filter(format: "price IN %@", [nan, 100]), { [nan, 100].contains($0.price) }),
            ("discount > 10", try Filter(format: "discount > 10"), { $0.discount.map { $0 > 10 } ?? false }),
            ("NOT discount > 10", try Filter(format: "NOT discount > 10"), { !($0.discount.map { $0 > 10 } ?? false) }),
            ("typed price > 100", (\ShelfBook.price > 100).filter, { $0.price > 100 }),
            ("typed price == NaN", (\ShelfBook.price == nan).filter, { _ in false }),
            ("title == Café (decomposed)", try Filter(format: "title == %@", "Cafe\u{301}"), { $0.title == "Caf\u{E9}" }),
            ("title BEGINSWITH Cafe", try Filter(format: "title BEGINSWITH 'Cafe'"), { $0.title.starts(with: "Cafe") }),
            ("title CONTAINS e", try Filter(format: "title CONTAINS 'e'"), { Self.contains($0.title, "e") }),
            ("title ENDSWITH e", try Filter(format: "title ENDSWITH 'e'"), { Self.endsWith($0.title, "e") }),
            (
                "title ENDSWITH öm (decomposed)", try Filter(format: "title ENDSWITH %@", "o\u{308}m"),
                { Self.endsWith($0.title, "\u{F6}m") }
            ),
            (
                "title ENDSWITH 🏽", try Filter(format: "title ENDSWITH %@", "x\u{1F44D}\u{1F3FD}"),
                { Self.endsWith($0.title, "x\u{1F44D}\u{1F3FD}") }
            ),
            ("typed beginsWith q", EntityFilter<ShelfBook>.beginsWith(\.title, "q").filter, { $0.title.starts(with: "q") }),
            ("typed contains ö", EntityFilter<ShelfBook>.contains(\.title, "o\u{308}").filter, { Self.contains($0.title, "\u{F6}") }),
        ]
        try await withTables(ShelfBook.create) { service, _ in
            try await service.update(entities: books)
            for (question, filter, expected) in questions {
                let want = Set(books.filter(expected).map(\.uuid))
                let got = Set(try await service.fetch(ShelfBook.self, where: EntityFilter(filter)).map(\.uuid))
                let (sqlAlone, swiftAlone) = (got.subtracting(want), want.subtracting(got))
                #expect(
                    sqlAlone.isEmpty && swiftAlone.isEmpty,
                    "\(question): SQL alone \(Self.titles(sqlAlone, books)), Swift alone \(Self.titles(swiftAlone, books))")
            }
            let refused = await #expect(throws: StructPostgresError.self) {
                try await service.fetch(ShelfBook.self, where: .format("title CONTAINS %@", "\u{301}"))
            }
            #expect(refused?.code == .unsupportedPredicate)
        }
    }

    /// Swift's `contains` of a collection: whole Characters.
    private static func contains(_ text: String, _ other: String) -> Bool {
        func characters<C: Collection>(_ base: C, _ other: C) -> Bool where C.Element: Equatable { base.contains(other) }
        return characters(Array(text), Array(other))
    }

    /// Swift's `hasSuffix` at whole Characters.
    private static func endsWith(_ text: String, _ suffix: String) -> Bool {
        Array(text).reversed().starts(with: Array(suffix).reversed())
    }

    /// The titles of `ids`, as scalars, for a message.
    private static func titles(_ ids: Set<UUID>, _ books: [ShelfBook]) -> [String] {
        books.filter { ids.contains($0.uuid) }.prefix(5).map {
            $0.title.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
        }
    }
}

/// A seeded generator, so that a failing run can be repeated with its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
