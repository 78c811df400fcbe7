import Foundation
import StructPostgresCore

/// Renders an array value as PostgreSQL's array literal text (`{"a","b",NULL}`), so that a batch of
/// array-typed values can travel as one `text[]` parameter and be cast per row.
package enum ArrayLiteral {
    package static func render(_ value: ColumnValue) -> String {
        guard case .array(let elements, _) = value else { return element(value) ?? "NULL" }
        var out = "{"
        for (index, item) in elements.enumerated() {
            if index > 0 { out += "," }
            guard let text = element(item) else {
                out += "NULL"
                continue
            }
            out += "\""
            for char in text.unicodeScalars {
                if char == "\"" || char == "\\" { out += "\\" }
                out.unicodeScalars.append(char)
            }
            out += "\""
        }
        return out + "}"
    }

    /// The text input form of one scalar, as PostgreSQL's input functions read it.
    private static func element(_ value: ColumnValue) -> String? {
        switch value {
        case .null: nil
        case .uuid(let v): v.uuidString
        case .text(let v): v
        case .bool(let v): v ? "t" : "f"
        case .int2(let v): String(v)
        case .int4(let v): String(v)
        case .int8(let v): String(v)
        case .float4(let v): floatText(Double(v), finite: v.isFinite, nan: v.isNaN, sign: v.sign, plain: "\(v)")
        case .float8(let v): floatText(v, finite: v.isFinite, nan: v.isNaN, sign: v.sign, plain: "\(v)")
        case .numeric(let v): "\(v)"
        case .timestamptz(let v): timestampText(v)
        case .bytea(let v): "\\x" + v.map { String(format: "%02x", $0) }.joined()
        case .jsonb(let v): v
        case .array: render(value)
        }
    }

    private static func floatText(_ value: Double, finite: Bool, nan: Bool, sign: FloatingPointSign, plain: String) -> String {
        if nan { return "NaN" }
        if !finite { return sign == .minus ? "-Infinity" : "Infinity" }
        return plain
    }

    /// `2024-05-01 12:30:45.123456+00`, microseconds exact, in the proleptic Gregorian calendar
    /// PostgreSQL uses (Foundation's switches to the Julian calendar before 1582).
    package static func timestampText(_ date: Date) -> String {
        let micros = TimestampCoding.microseconds(date)
        let (day, microOfDay) = floorDivide(micros, 86_400_000_000)
        let (year, month, dayOfMonth) = civilDate(daysSince2000: day)
        let (hour, rest) = floorDivide(microOfDay, 3_600_000_000)
        let (minute, rest2) = floorDivide(rest, 60_000_000)
        let (second, fraction) = floorDivide(rest2, 1_000_000)
        let bc = year <= 0
        let text = String(
            format: "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%06lld+00", bc ? 1 - year : year, month, dayOfMonth,
            hour, minute, second, fraction)
        return bc ? text + " BC" : text
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value / divisor - (value % divisor < 0 ? 1 : 0)
        return (quotient, value - quotient * divisor)
    }

    /// Year (astronomical: 0 is 1 BC), month and day from days since 2000-01-01 (Howard Hinnant's algorithm).
    package static func civilDate(daysSince2000: Int64) -> (Int64, Int64, Int64) {
        let z = daysSince2000 + 10_957 + 719_468
        let era = floorDivide(z, 146_097).0
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
