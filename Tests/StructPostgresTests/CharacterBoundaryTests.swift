import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

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
            (
                "hangulAfterLeading", CharacterBoundary.hangulAfterLeading,
                Self.scan { notExtending($0) && Self.isOneCharacter("\u{1100}", $0) && !Self.isOneCharacter("\u{1161}", $0) }
            ),
            (
                "hangulVowels", CharacterBoundary.hangulVowels,
                Self.scan { notExtending($0) && Self.isOneCharacter("\u{1161}", $0) && !Self.isOneCharacter("\u{11A8}", $0) }
            ),
            ("hangulTrailing", CharacterBoundary.hangulTrailing, Self.scan { notExtending($0) && Self.isOneCharacter("\u{11A8}", $0) }),
            (
                "regionalIndicators", CharacterBoundary.regionalIndicators,
                Self.scan { notExtending($0) && Self.isOneCharacter("\u{1F1E6}", $0) }
            ),
            ("prepending", CharacterBoundary.prepending, Self.scan(prepend)),
            ("hangulLeading", CharacterBoundary.hangulLeading, Self.scan { !prepend($0) && Self.isOneCharacter("", $0, "\u{AC00}") }),
            // GB11, both ways: what an emoji continues through a joiner, what continues an emoji and a joiner.
            (
                "extendedPictographic", CharacterBoundary.extendedPictographic,
                Self.scan { Self.isOneCharacter("", $0, "\u{200D}\u{1F4DA}") }
            ),
            (
                "extendedPictographic", CharacterBoundary.extendedPictographic,
                Self.scan { notExtending($0) && Self.isOneCharacter("\u{1F4DA}\u{200D}", $0) }
            ),
            ("emojiExtending", CharacterBoundary.emojiExtending, Self.scan { Self.isOneCharacter("\u{1F4DA}", $0, "\u{200D}\u{1F4DA}") }),
        ]
        for (name, stored, scanned) in tables {
            let source = scanned.map {
                "0x\(String($0.lowerBound, radix: 16, uppercase: true))...0x\(String($0.upperBound, radix: 16, uppercase: true)),"
            }
            #expect(stored == scanned, "\(name) differs from this Swift's segmentation; it is now:\n\(source.joined(separator: " "))")
        }
        // Not Unicode's Emoji property, and Extend* is more than one scalar, without a joiner or a spacing mark.
        #expect(Self.scan { $0.properties.isEmoji } != CharacterBoundary.extendedPictographic)
        #expect("\u{1F44D}\u{FE0F}\u{1F3FD}\u{200C}\u{200D}\u{1F4DA}".count == 1)
        #expect("\u{1F44D}\u{200D}\u{200D}\u{1F4DA}".count == 2 && "\u{1F44D}\u{903}\u{200D}\u{1F4DA}".count == 2)
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
        (.contains, "\u{1F3FD}\u{200D}\u{1F4DA}", "it begins with U+1F3FD, a combining mark"),
        (.contains, "\u{200D}\u{1F4DA}", "it begins with U+200D, a combining mark"),
        (.contains, "\u{0937}", "it begins with U+0937, an Indic consonant"),
        (.contains, "\u{1161}", "it begins with U+1161, a Hangul vowel"),
        (.beginsWith, "\u{0600}", "it ends with U+0600, which joins whatever Character follows it"),
        (.beginsWith, "\u{0915}\u{094D}", "it ends with U+094D, an Indic virama"),
        (.beginsWith, "\u{1F468}\u{200D}\u{0915}\u{094D}", "it ends with U+094D, an Indic virama"),
    ])
    func operandsWhoseCharactersDependOnMoreThanANeighbourAreRefused(op: Filter.Operator, text: String, reason: String) {
        #expect {
            _ = try CharacterBoundary.pattern(op, text)
        } throws: { error in
            (error as? CharacterBoundary.Refusal)?.reason.hasPrefix(reason) == true
        }
    }

    /// GB11: an emoji continues an emoji, Extend* and a zero-width joiner before it; GB12 and GB13: a regional
    /// indicator pairs with the one before it after an odd run of them. The pattern matches the run before it.
    @Test func emojiAndRegionalIndicatorsAreMatchedByWhatPrecedesThem() throws {
        let books = try #require(try pattern(.contains, "\u{1F4DA}"))
        #expect(
            books.hasPrefix(#"(?:^|[^\u200D]|(?:^|[^\u00A9\u00AE\u203C"#),
            "the start, a scalar but a joiner, or a joiner after neither an emoji (© too) nor Extend: \(books.prefix(60))")
        let neither = try #require(books.components(separatedBy: "])[").first)
        let extend = try #require(books.components(separatedBy: "])[").dropFirst().first?.components(separatedBy: #"]*\u200D)"#).first)
        #expect(
            neither.contains(#"\U0001F3FB-\U0001F3FF"#) && extend.contains(#"\U0001F3FB-\U0001F3FF"#) && extend.contains(#"\u200C"#),
            "Extend holds skin tones and ZWNJ")
        #expect(
            !extend.contains(#"\u0903"#) && !extend.contains(#"\u200D"#) && !extend.contains(#"\u00A9"#),
            "but no spacing mark, no joiner, no emoji (GB11)")
        #expect(books.contains(#"]*\u200D)(?<![\u0600-\u0605"#), "then no Prepend scalar right before it")
        #expect(books.contains(#"])\U0001F4DA(?![\u0300-\u036F"#))
        let flag = try #require(try pattern(.contains, "\u{1F1EB}\u{1F1F7}"))
        let even = #"(?:^|[^\U0001F1E6-\U0001F1FF])(?:[\U0001F1E6-\U0001F1FF][\U0001F1E6-\U0001F1FF])*"#
        #expect(
            flag.hasPrefix(even + #"(?<![\u0600-\u0605"#) && flag.contains(#"])\U0001F1EB\U0001F1F7(?!["#),
            "an even run of regional indicators before it: \(flag)")
        #expect(!flag.hasSuffix(#"\U0001F1E6-\U0001F1FF])"#), "a whole flag is followed by anything but a mark")
        let half = try #require(try pattern(.endsWith, "\u{1F1EB}"))
        #expect(half.hasPrefix(even + "(?<![") && half.hasSuffix(#"])\U0001F1EB$"#), "\(half)")
        let three = try #require(try pattern(.contains, "\u{1F1EB}\u{1F1F7}\u{1F1E6}"))
        #expect(three.hasSuffix(#"\U0001F1E6-\U0001F1FF])"#), "a third is continued by a fourth: \(three.suffix(40))")
        let joiner = try #require(try pattern(.beginsWith, "\u{1F468}\u{200D}"))
        #expect(
            joiner.hasPrefix(#"^\U0001F468\u200D(?![\u0300-"#) && joiner.contains(#"\u00A9\u00AE\u203C"#),
            "no emoji after it: \(joiner.prefix(40))")
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
        // And so are emoji, flags and an emoji's zero-width joiner at either end.
        for op in [Filter.Operator.contains, .endsWith, .beginsWith] {
            for text in [
                "\u{1F44D}", "\u{2764}\u{FE0F}", "\u{A9}", "\u{1F1EB}", "\u{1F1EB}\u{1F1F7}", "\u{1F468}\u{200D}",
                "x\u{1F44D}\u{1F3FD}\u{200D}",
            ] {
                #expect(try pattern(op, text) != nil, "\(op) \(text.unicodeScalars.map { String($0.value, radix: 16) })")
            }
        }
    }
}
