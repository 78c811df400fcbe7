import Testing
@testable import StructPostgres

/// The tables of `CharacterBoundary+Tables.swift` against the running standard library, and which operands of
/// BEGINSWITH / CONTAINS / ENDSWITH are matched at whole Characters and which are refused. (That the SQL then agrees
/// with Swift is `PredicateDifferentialTests`, against PostgreSQL.)
@Suite struct CharacterBoundaryTests {
    /// The scalars for which `probe` holds, as ranges.
    private static func scan(_ probe: (Unicode.Scalar) -> Bool) -> [ClosedRange<UInt32>] {
        var ranges: [ClosedRange<UInt32>] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value), probe(scalar) else { continue }
            if let last = ranges.last, last.upperBound + 1 == value {
                ranges[ranges.count - 1] = last.lowerBound...value
            } else {
                ranges.append(value...value)
            }
        }
        return ranges
    }

    private static func isOneCharacter(_ before: String, _ scalar: Unicode.Scalar, _ after: String = "") -> Bool {
        var text = before
        text.unicodeScalars.append(scalar)
        return (text + after).count == 1
    }

    /// The tables as this Swift segments text. When Swift's Unicode data changes this fails, and prints the
    /// tables anew for `CharacterBoundary+Tables.swift`.
    @Test func tablesAreTheStandardLibrarysSegmentation() {
        let extending = Self.scan { Self.isOneCharacter("a", $0) }
        let notExtending = { (scalar: Unicode.Scalar) in !Self.isOneCharacter("a", scalar) }
        let prepend = { (scalar: Unicode.Scalar) in Self.isOneCharacter("", scalar, "a") }
        let tables: [(String, [ClosedRange<UInt32>], [ClosedRange<UInt32>])] = [
            ("extending", CharacterBoundary.extending, extending),
            ("hangulAfterLeading", CharacterBoundary.hangulAfterLeading,
             Self.scan { notExtending($0) && Self.isOneCharacter("\u{1100}", $0) && !Self.isOneCharacter("\u{1161}", $0) }),
            ("hangulVowels", CharacterBoundary.hangulVowels,
             Self.scan { notExtending($0) && Self.isOneCharacter("\u{1161}", $0) && !Self.isOneCharacter("\u{11A8}", $0) }),
            ("hangulTrailing", CharacterBoundary.hangulTrailing, Self.scan { notExtending($0) && Self.isOneCharacter("\u{11A8}", $0) }),
            ("regionalIndicators", CharacterBoundary.regionalIndicators, Self.scan { notExtending($0) && Self.isOneCharacter("\u{1F1E6}", $0) }),
            ("prepending", CharacterBoundary.prepending, Self.scan(prepend)),
            ("hangulLeading", CharacterBoundary.hangulLeading, Self.scan { !prepend($0) && Self.isOneCharacter("", $0, "\u{AC00}") }),
        ]
        for (name, stored, scanned) in tables {
            let source = scanned.map { "0x\(String($0.lowerBound, radix: 16, uppercase: true))...0x\(String($0.upperBound, radix: 16, uppercase: true))," }
            #expect(stored == scanned, "\(name) differs from this Swift's segmentation; it is now:\n\(source.joined(separator: " "))")
        }
    }

    private func pattern(_ op: Filter.Operator, _ text: String) throws -> String? {
        try CharacterBoundary.pattern(op, text)
    }

    @Test func theExpressionHoldsTheMatchToWholeCharacters() throws {
        #expect(try pattern(.beginsWith, "") == nil, "an empty operand: LIKE alone agrees")
        let prefix = try #require(try pattern(.beginsWith, "Caf"))
        #expect(prefix.hasPrefix(#"^Caf(?![\u0300-\u036F"#), "no mark may follow: \(prefix.prefix(40))")
        let symbols = try #require(try pattern(.beginsWith, "a.b*(c)"))
        #expect(symbols.hasPrefix(#"^a\u002Eb\u002A\u0028c\u0029(?!["#), "operators are escapes, not operators")
        let contains = try #require(try pattern(.contains, "\u{D55C}"))
        #expect(contains.hasPrefix(#"(?<![\u0600-\u0605"#), "a Prepend scalar before it would join it")
        #expect(contains.contains(#"\u1100-\u115F\uA960-\uA97C]"#), "so would a leading jamo before a syllable")
        #expect(contains.contains(#"\uD55C(?!["#))
        #expect(contains.contains(#"\u11A8-\u11FF"#), "a trailing jamo after an LV or LVT syllable would join it")
        let suffix = try #require(try pattern(.endsWith, "\n"))
        #expect(suffix.hasPrefix(#"(?<![\u000D]"#) && suffix.hasSuffix(#"\u000A$"#), "CR before LF is one Character: \(suffix)")
        let flag = try #require(try pattern(.beginsWith, "\u{1F1EB}"))
        #expect(flag.contains(#"\U0001F1E6-\U0001F1FF"#), "half a flag is continued by the other half")
        let wholeFlag = try #require(try pattern(.beginsWith, "\u{1F1EB}\u{1F1F7}"))
        #expect(!wholeFlag.contains(#"\U0001F1E6-\U0001F1FF"#), "a whole flag is not")
    }

    @Test(arguments: [
        (Filter.Operator.contains, "\u{301}", "it begins with U+0301, a combining mark"),
        (.endsWith, "\u{1F3FD}x", "it begins with U+1F3FD, a combining mark"),
        (.contains, "\u{1F44D}", "it begins with U+1F44D, an emoji"),
        (.contains, "\u{1F1EB}\u{1F1F7}", "it begins with U+1F1EB, a regional indicator"),
        (.contains, "\u{0937}", "it begins with U+0937, an Indic consonant"),
        (.contains, "\u{1161}", "it begins with U+1161, a Hangul vowel"),
        (.beginsWith, "\u{0600}", "it ends with U+0600, which joins whatever Character follows it"),
        (.beginsWith, "\u{1F468}\u{200D}", "it ends with a zero-width joiner after an emoji"),
        (.beginsWith, "\u{0915}\u{094D}", "it ends with U+094D, an Indic virama"),
    ])
    func operandsWhoseCharactersDependOnMoreThanANeighbourAreRefused(op: Filter.Operator, text: String, reason: String) {
        #expect {
            _ = try CharacterBoundary.pattern(op, text)
        } throws: { error in
            (error as? CharacterBoundary.Refusal)?.reason.hasPrefix(reason) == true
        }
    }

    @Test func whatMayFollowOrPrecedeIsAllowed() throws {
        // Anchored at the start, a combining mark, an emoji or a flag begins the text's first Character.
        for text in ["\u{301}", "\u{1F44D}", "\u{1F1EB}\u{1F1F7}", "\u{0937}"] {
            #expect(try pattern(.beginsWith, text) != nil, "\(text.unicodeScalars.first!.value)")
        }
        // Emoji, flags and Indic consonants after the first Character are matched, not refused.
        for text in ["x\u{1F44D}", "x\u{1F1EB}\u{1F1F7}", "x\u{0937}", "\u{D55C}\u{AD6D}"] {
            #expect(try pattern(.contains, text) != nil)
        }
    }
}
