import StructPostgresCore
import StructPostgresDriver

/// Makes `BEGINSWITH`, `CONTAINS` and `ENDSWITH` (`starts(with:)` and `contains(_:)` in `#Predicate`) match whole
/// Characters, as Swift's `String` does, where `LIKE` matches code points.
///
/// In Swift, `"q\u{301}x".starts(with: "q")` and `"👍🏽".contains("👍")` are false: a Character (an extended
/// grapheme cluster) is compared whole. `LIKE 'q%'` is true for both. Composing text (``NFC``) does not help where no
/// precomposed character exists, so the comparison adds a regular expression that holds only where the match begins
/// and ends between Characters of the stored text: no scalar right after it that would continue its last Character,
/// none right before it that its first Character would continue.
///
/// Which scalars those are follows from the operand itself, asked of Swift: a probe scalar of each class of UAX #29
/// is put next to the operand and `String.count` says whether it joined. Two rules look further back than one
/// scalar, and the pattern matches the run before the operand that decides them: an emoji continues an emoji,
/// Extend* and a zero-width joiner before it (GB11), and a regional indicator pairs with the one before it after an
/// odd run of them (GB12, GB13). Where the answer would depend on more (an Indic consonant after a virama), or on the
/// 11,172 Hangul syllables one by one, the operand is refused by name rather than matched by a rule that holds only
/// sometimes.
enum CharacterBoundary {
    /// Why an operand cannot be matched at whole Characters.
    struct Refusal: Error {
        let reason: String
    }

    /// A POSIX regular expression (PostgreSQL's `~`) that holds where `text` occurs in the stored text, placed as
    /// `op` says, at whole Characters; `nil` when `LIKE` alone already agrees with Swift (an empty operand).
    ///
    /// - Parameters:
    ///   - op: `.beginsWith`, `.contains` or `.endsWith`.
    ///   - text: the operand, composed (``NFC``).
    /// - Throws: ``Refusal`` when the first Character of a `.contains` or `.endsWith` operand could continue the
    ///   one before it in the stored text in a way these constraints do not decide, or when its last could continue
    ///   into the next that way.
    static func pattern(_ op: Filter.Operator, _ text: String) throws(Refusal) -> String? {
        guard !text.isEmpty else { return nil }
        let after = try following(text)
        let before = op == .beginsWith ? "" : try preceding(text)
        let escaped = escape(text)
        switch op {
        case .beginsWith: return "^" + escaped + lookahead(after)
        case .endsWith: return before + escaped + "$"
        default: return before + escaped + lookahead(after)
        }
    }

    /// The scalars that, right after `text`, would continue its last Character.
    private static func following(_ text: String) throws(Refusal) -> [ClosedRange<UInt32>] {
        func joins(_ probe: Unicode.Scalar) -> Bool {
            var joined = text
            joined.unicodeScalars.append(probe)
            return joined.count == text.count
        }
        let last = describe(text.unicodeScalars.last!)
        if joins("a") {
            throw Refusal(reason: "it ends with \(last), which joins whatever Character follows it (Prepend)")
        }
        if joins("\u{0915}") {
            throw Refusal(reason: "it ends with \(last), an Indic virama after a consonant, which joins a consonant after it")
        }
        var scalars: [ClosedRange<UInt32>] = []
        if joins("\u{0301}") { scalars += extending }
        if joins("\u{1100}") { scalars += hangulAfterLeading }
        if joins("\u{1161}") { scalars += hangulVowels }
        if joins("\u{11A8}") { scalars += hangulTrailing }
        if joins("\u{1F1E6}") { scalars += regionalIndicators }
        // GB11: it ends with an emoji, Extend* and a zero-width joiner.
        if joins("\u{1F44D}") { scalars += extendedPictographic }
        if joins("\n") { scalars.append(0x0A...0x0A) }
        return scalars
    }

    /// What the pattern requires right before `text` for it to begin a Character of the stored text: no scalar that
    /// its first Character would continue (a lookbehind constraint), and, for an emoji or a regional indicator, no
    /// run of scalars it would continue. That run is matched, not looked behind: an unbounded repetition works inside
    /// PostgreSQL's lookbehind too, but made the whole match five to eight times slower.
    private static func preceding(_ text: String) throws(Refusal) -> String {
        // Whether `probe` stays a Character of its own before `text`, and `text` keeps its own Characters.
        func separates(_ probe: String) -> Bool {
            let joined = probe + text
            return joined.count == text.count + 1 && joined.first.map { $0.unicodeScalars.elementsEqual(probe.unicodeScalars) } == true
        }
        let first = text.unicodeScalars.first!
        let named = describe(first)
        var run = ""
        if !separates("a") {
            throw Refusal(reason: "it begins with \(named), a combining mark or another scalar that continues the Character before it")
        }
        if !separates("\u{1F44D}\u{200D}") {
            guard holds(extendedPictographic, first) else {
                throw Refusal(reason: "it begins with \(named), an emoji, which continues an emoji and a zero-width joiner before it")
            }
            // GB11: not after an emoji, Extend* and a zero-width joiner; so after the start, a scalar other than a
            // joiner, or a joiner after Extend* that follows the start or a scalar that is neither an emoji nor Extend.
            let neither = bracket(extendedPictographic + emojiExtending, negated: true)
            run =
                "(?:^|" + bracket([0x200D...0x200D], negated: true) + "|(?:^|" + neither + ")" + bracket(emojiExtending) + "*"
                + code(0x200D) + ")"
        }
        if !separates("\u{0915}\u{094D}") {
            throw Refusal(reason: "it begins with \(named), an Indic consonant, which continues a consonant and virama before it")
        }
        if !separates("\u{1F1E6}") {
            guard holds(regionalIndicators, first) else {
                throw Refusal(reason: "it begins with \(named), a regional indicator, which pairs with the ones before it as a flag")
            }
            // GB12, GB13: after an even run of regional indicators (whole flags, or none).
            let indicator = bracket(regionalIndicators)
            run = "(?:^|" + bracket(regionalIndicators, negated: true) + ")(?:" + indicator + indicator + ")*"
        }
        if !separates("\u{1161}") {
            throw Refusal(reason: "it begins with \(named), a Hangul vowel or trailing jamo, which continues the syllable before it")
        }
        var scalars: [ClosedRange<UInt32>] = []
        if !separates("\u{0600}") { scalars += prepending }
        if !separates("\u{1100}") { scalars += hangulLeading }
        if !separates("\r") { scalars.append(0x0D...0x0D) }
        return run + lookbehind(scalars)
    }

    /// Whether `scalar` is in `table`.
    private static func holds(_ table: [ClosedRange<UInt32>], _ scalar: Unicode.Scalar) -> Bool {
        table.contains { $0.contains(scalar.value) }
    }

    private static func lookahead(_ scalars: [ClosedRange<UInt32>]) -> String {
        scalars.isEmpty ? "" : "(?!" + bracket(scalars) + ")"
    }

    private static func lookbehind(_ scalars: [ClosedRange<UInt32>]) -> String {
        scalars.isEmpty ? "" : "(?<!" + bracket(scalars) + ")"
    }

    /// A bracket expression of `scalars` (or of every scalar but them), every one written as an escape (`\u0301`),
    /// so the pattern is ASCII.
    private static func bracket(_ scalars: [ClosedRange<UInt32>], negated: Bool = false) -> String {
        var out = negated ? "[^" : "["
        for range in scalars {
            out += code(range.lowerBound)
            if range.upperBound != range.lowerBound { out += "-" + code(range.upperBound) }
        }
        return out + "]"
    }

    /// `text` as a literal of a regular expression: ASCII letters and digits as they are, every other scalar as an
    /// escape, so that nothing in it is an operator and nothing needs composing.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                out.unicodeScalars.append(scalar)
            } else {
                out += code(scalar.value)
            }
        }
        return out
    }

    private static func code(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return value > 0xFFFF
            ? "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
            : "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    }

    /// `U+0301` and the scalar, for a message.
    private static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
