import Foundation
import StructPostgres
import Testing

/// Operands that begin with an emoji or a regional indicator, or end with an emoji and a zero-width joiner or half a
/// flag, against stored text built around them to join them or not: `contains`, `starts(with:)`, `hasPrefix` and
/// `hasSuffix` must answer in PostgreSQL as Swift answers, every one, and none may be refused.
@Suite struct CharacterBoundaryDifferentialTests {
    /// What stands before an operand: emoji with skin tones, variation selectors and joiners that do or do not reach
    /// it (a spacing mark, a second joiner, text between), and runs of regional indicators of odd and even length.
    static let before = [
        "", "x", " ", "\u{600}", "\u{1F44D}\u{200D}", "\u{1F44D}\u{1F3FD}\u{200D}", "\u{2764}\u{FE0F}\u{200D}",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}", "\u{A9}\u{200D}", "\u{1F44D}\u{301}\u{1F3FD}\u{200D}", "\u{1F44D}\u{200C}\u{200D}",
        "x\u{200D}", "\u{1F44D}\u{200D}\u{200D}", "\u{1F44D}\u{903}\u{200D}", "\u{1F44D}\u{200D}\u{301}\u{200D}",
        "\u{1F44D} \u{301}\u{200D}",
        "\u{1F44D}\u{1F3FD}", "\u{1F1EB}", "\u{1F1EB}\u{1F1F7}", "\u{1F1EB}\u{1F1F7}\u{1F1E6}", "\u{1F1EB}\u{1F1F7}\u{1F1E6}\u{1F1E6}",
        "x\u{1F1E6}", "x\u{1F1E6}\u{1F1E6}", "\u{600}\u{1F1E6}", "\u{600}\u{1F1E6}\u{1F1E6}", "\u{1F1E6}\u{301}", "\u{1F1E6}\u{200D}",
    ]
    /// What follows an operand: an emoji (joined after a zero-width joiner), a skin tone, a joiner, the other half of
    /// a flag, text.
    static let after = [
        "", "x", "\u{1F4DA}", "\u{1F3FD}", "\u{FE0F}", "\u{200D}\u{1F4DA}", "\u{1F1F7}", "\u{1F1F7}\u{1F1EB}", "\u{301}", "\u{A9}",
    ]
    /// Operands that `CharacterBoundary` matches by what precedes them (an emoji: no emoji, Extend* and joiner; a
    /// regional indicator: an even run of them) or by what follows them (after an emoji and a joiner: no emoji).
    static let operands = [
        "\u{1F4DA}", "\u{1F44D}", "\u{1F44D}\u{1F3FD}", "\u{2764}\u{FE0F}", "\u{2764}", "\u{A9}", "\u{1F468}\u{200D}\u{1F469}",
        "\u{1F4DA}x", "\u{1F468}\u{200D}", "\u{1F44D}\u{1F3FD}\u{200D}", "x\u{1F44D}\u{200D}", "\u{1F1EB}", "\u{1F1EB}\u{1F1F7}",
        "\u{1F1EB}\u{1F1F7}\u{1F1E6}", "\u{1F1E6}\u{1F1E6}", "x\u{1F1EB}", "\u{1F1EB}\u{1F1F7}x", "\u{1F1EB}\u{200D}\u{1F4DA}",
    ]
    /// Scalars that random titles are made of.
    static let pieces = [
        "\u{1F44D}", "\u{1F4DA}", "\u{2764}", "\u{A9}", "\u{1F468}", "\u{1F3FD}", "\u{FE0F}", "\u{200D}", "\u{200C}", "\u{301}",
        "\u{903}", "\u{600}", "\u{1F1EB}", "\u{1F1F7}", "\u{1F1E6}", "x", " ",
    ]

    /// Every operand between every `before` and `after`, then random runs of `pieces`.
    static func titles(seed: UInt64) -> [String] {
        var random = SplitMix64(seed: seed)
        let built = operands.flatMap { operand in before.flatMap { head in after.map { head + operand + $0 } } }
        let loose = (0..<600).map { _ in
            (0..<Int.random(in: 1...10, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        return built + loose
    }

    @Test func emojiAndRegionalIndicatorOperandsAgreeWithSwift() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        let books = Self.titles(seed: seed).map { ShelfBook(uuid: UUID(), title: $0, price: 0) }
        // Operands cut anywhere from random titles: the refusals that remain must be for something else.
        let cut: [String] = (0..<40).map { _ in
            let scalars = Array(books.suffix(600).randomElement(using: &random)!.title.unicodeScalars)
            let start = Int.random(in: 0..<scalars.count, using: &random)
            var operand = ""
            operand.unicodeScalars.append(contentsOf: scalars[start..<min(scalars.count, start + Int.random(in: 1...4, using: &random))])
            return operand
        }
        try await withTables(ShelfBook.create) { service, _ in
            try await service.update(entities: books)
            var (informative, refused) = (0, 0)
            for (index, operand) in (Self.operands + cut).enumerated() {
                let contains = #Predicate<ShelfBook> { $0.title.contains(operand) }
                let startsWith = #Predicate<ShelfBook> { $0.title.starts(with: operand) }
                let questions: [(String, Filter, (ShelfBook) throws -> Bool)] = [
                    ("#Predicate contains", Filter(contains), { try contains.evaluate($0) }),
                    ("#Predicate starts(with:)", Filter(startsWith), { try startsWith.evaluate($0) }),
                    ("CONTAINS", try Filter(format: "title CONTAINS %@", operand), { Array($0.title).contains(Array(operand)) }),
                    ("BEGINSWITH", try Filter(format: "title BEGINSWITH %@", operand), { $0.title.hasPrefix(operand) }),
                    ("ENDSWITH", try Filter(format: "title ENDSWITH %@", operand), { $0.title.hasSuffix(operand) }),
                ]
                let scalars = operand.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
                for (name, filter, expected) in questions {
                    do {
                        let got = Set(try await service.fetch(ShelfBook.self, where: EntityFilter(filter)).map(\.uuid))
                        let want = Set(try books.filter(expected).map(\.uuid))
                        let (sqlAlone, swiftAlone) = (got.subtracting(want), want.subtracting(got))
                        #expect(
                            sqlAlone.isEmpty && swiftAlone.isEmpty,
                            "\(name) [\(scalars)] (seed \(seed)): SQL alone \(Self.titles(sqlAlone, books)), Swift alone \(Self.titles(swiftAlone, books))"
                        )
                        if !want.isEmpty && want.count < books.count { informative += 1 }
                    } catch let error as StructPostgresError where error.code == .unsupportedPredicate {
                        // The designed operands are all matched; a cut one may still begin with a combining mark or
                        // end with a Prepend scalar, but never be refused for an emoji or a regional indicator.
                        #expect(index >= Self.operands.count, "\(name) [\(scalars)] refused: \(error.message)")
                        #expect(
                            !error.message.contains("emoji") && !error.message.contains("regional indicator"),
                            "\(name) [\(scalars)]: \(error.message)")
                        refused += 1
                    }
                }
            }
            #expect(
                informative >= Self.operands.count * 4,
                "most questions keep some titles and drop others: \(informative), \(refused) refused")
        }
    }

    /// The titles of `ids`, as scalars, for a message.
    private static func titles(_ ids: Set<UUID>, _ books: [ShelfBook]) -> [String] {
        books.filter { ids.contains($0.uuid) }.prefix(5).map {
            $0.title.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
        }
    }
}
