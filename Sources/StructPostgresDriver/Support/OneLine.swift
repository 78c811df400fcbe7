import StructPostgresCore

/// Text from outside (names from the catalog, coding keys, messages quoting them) made safe to print on one line:
/// a line break in a column's name cannot end a SQL comment, start a line of its own in a report, or move a
/// terminal's cursor.
package enum OneLine {
    /// `text` with every control character, format character (bidirectional overrides, zero-width joiners) and line or
    /// paragraph separator written as an escape, `\u{A}`; everything else as it is.
    package static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `scalar` changes how the text around it is laid out or read, rather than being a character of it.
    package static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: true
        default: false
        }
    }
}
