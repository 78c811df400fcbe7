import Foundation

/// Renders an array value as PostgreSQL's array literal text (`{"a","b",NULL}`), so that a batch of
/// array-typed values can travel as one `text[]` parameter and be cast per row.
enum ArrayLiteral {
    static func render(_ value: ColumnValue) -> String {
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

    /// `2024-05-01 12:30:45.123456+00`, microseconds exact.
    static func timestampText(_ date: Date) -> String {
        let micros = TimestampCoding.microseconds(date)
        let secondsSince2000 = micros.quotientAndRemainder(dividingBy: 1_000_000)
        var seconds = secondsSince2000.quotient
        var fraction = secondsSince2000.remainder
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        let whole = Date(timeIntervalSince1970: TimestampCoding.epochOffset + Double(seconds))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.era, .year, .month, .day, .hour, .minute, .second], from: whole)
        let bc = c.era == 0
        let text = String(
            format: "%04d-%02d-%02d %02d:%02d:%02d.%06d+00", c.year!, c.month!, c.day!, c.hour!, c.minute!,
            c.second!, Int(fraction))
        return bc ? text + " BC" : text
    }
}
