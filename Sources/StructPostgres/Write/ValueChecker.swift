import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Checks one column's values against the column's type before anything is sent.
struct ValueChecker: Sendable {
    let entity: String
    let table: String
    let column: TableSchema.Column
    let property: String
    let rowKey: @Sendable (Int) -> String

    /// Returns the wire type shared by the non-null values.
    func check(_ values: [ColumnValue]) throws -> WireType? {
        guard let first = values.firstIndex(where: { !$0.isNull }) else { return nil }
        let wire = values[first].wireType!
        let isArray = values[first].isArray
        try checkCompatible(values[first])
        for (row, value) in values.enumerated() where !value.isNull {
            guard value.wireType == wire, value.isArray == isArray else {
                throw fail(.unsupportedType, "values of property '\(property)' do not all have the same type", row: row)
            }
            try check(value, row: row)
        }
        return wire
    }

    /// Refuses a column the server fills whatever a write gives it (see ``TableSchema/Column/generatedAlways``).
    func checkWritable() throws {
        if let generated = column.generatedAlways {
            throw StructPostgresError(
                .unsupportedType,
                "property '\(property)' is written to column '\(column.name)', which is \(generated.declaration): the server refuses every value written there; leave it out of what \(entity) encodes",
                entity: entity, table: table, column: column.name, property: property)
        }
    }

    /// Whether a value like `value` can be written to `column` and read back: the rule of one value, applied to
    /// each element of an array, so `[Int]` fits `bigint[]` and neither `text[]` nor `integer` does.
    static func fits(_ value: ColumnValue, _ column: TableSchema.Column) -> Bool {
        if case .array(_, let element) = value {
            // An array column whose element the catalog did not describe takes any array, as before element types were read.
            guard let elementColumn = column.element else { return column.isArray }
            return element.map { fits($0, elementColumn) } ?? true
        }
        guard let wire = value.wireType else { return true }
        return column.isArray ? wire == .text : fits(wire, column)
    }

    /// The rule of one value: text is cast to the column's type by the server (enums, inet, intervals...), but not
    /// into a number or a boolean, which reads back into a number or a Bool, never into the String that was written.
    private static func fits(_ wire: WireType, _ column: TableSchema.Column) -> Bool {
        let takesText = column.category != "N" && column.category != "B"
        let base = column.baseName
        return column.accepts(wire, text: takesText, json: base == "jsonb" || base == "json" || column.isStringLike)
    }

    private func checkCompatible(_ value: ColumnValue) throws {
        guard !Self.fits(value, column) else { return }
        let swiftSide =
            if case .array(_, let element?) = value { "arrays of \(element.rawValue)" } else if value.isArray { "arrays" } else {
                value.wireType?.rawValue ?? "nil"
            }
        throw StructPostgresError(
            .unsupportedType,
            "property '\(property)' holds \(swiftSide) values, which column '\(column.name)' of type \(column.typeName) cannot store and give back",
            entity: entity, table: table, column: column.name, property: property)
    }

    /// Checks a non-null value of a type the column accepts: range, length, NUL bytes, and what the column would
    /// silently lose (a fraction in an integer column). A `Date` in a `date` column is kept as its day in UTC, by
    /// design: such a column is a day, which a key of days (`DailyTotal.day`) relies on.
    func check(_ value: ColumnValue, row: Int) throws {
        try check(value, row: row, in: column)
    }

    private func check(_ value: ColumnValue, row: Int, in column: TableSchema.Column) throws {
        if let problem = value.encodingProblem { throw fail(.invalidValue, problem, row: row, sqlState: SQLState.numericValueOutOfRange) }
        switch value {
        case .text(let text), .jsonb(let text):
            if Self.holdsNul(text) {
                throw fail(
                    .invalidValue, "a string holds a NUL byte (\\0), which PostgreSQL cannot store", row: row,
                    sqlState: SQLState.characterNotInRepertoire)
            }
            if case .jsonb = value, text.contains("\\u0000") {
                throw fail(
                    .invalidValue, "JSON holds \\u0000, which jsonb cannot store", row: row,
                    sqlState: SQLState.untranslatableCharacter)
            }
            if let limit = column.maxLength, text.utf8.count > limit, text.unicodeScalars.count > limit {
                throw fail(
                    .invalidValue, "a string of \(text.unicodeScalars.count) characters is longer than \(column.typeName)",
                    row: row, sqlState: SQLState.stringDataRightTruncation)
            }
        case .array(let elements, _):
            let elementColumn = column.element ?? column
            for element in elements where !element.isNull { try check(element, row: row, in: elementColumn) }
        case .int2, .int4, .int8, .numeric:
            try checkRange(value, row: row, in: column)
        case .float8(let double) where !double.isFinite && column.category == "N" && !column.baseName.hasPrefix("float"):
            throw fail(
                .invalidValue, Self.nonFinite(double.isNaN, double.sign, column), row: row, sqlState: SQLState.numericValueOutOfRange)
        case .float4(let float) where !float.isFinite && column.category == "N" && !column.baseName.hasPrefix("float"):
            throw fail(.invalidValue, Self.nonFinite(float.isNaN, float.sign, column), row: row, sqlState: SQLState.numericValueOutOfRange)
        case .float8(let double) where column.baseName == "float4":
            if double.isFinite && abs(double) > Double(Float.greatestFiniteMagnitude) {
                throw fail(
                    .invalidValue, "a value is out of range for column '\(column.name)' of type real",
                    row: row, sqlState: SQLState.numericValueOutOfRange)
            }
        case .float8(let double) where column.isInteger:
            try checkWhole(double, row: row, in: column)
        case .float4(let float) where column.isInteger:
            try checkWhole(Double(float), row: row, in: column)
        default:
            break
        }
    }

    /// A `Double` or `Float` bound for an integer column: PostgreSQL would round a fraction away, so only whole
    /// values within the column's range are written.
    private func checkWhole(_ value: Double, row: Int, in column: TableSchema.Column) throws {
        if value.rounded(.towardZero) != value {
            throw fail(
                .invalidValue,
                "a value with a fractional part cannot be stored in column '\(column.name)' of type \(column.typeName), which would round it; round it before writing, or use a double precision or numeric column",
                row: row, sqlState: SQLState.numericValueOutOfRange)
        }
        if let (low, high) = Self.integerBounds(column), value < Double(low) || value >= Double(high) + 1 {
            throw fail(
                .invalidValue, "a value is out of range for column '\(column.name)' of type \(column.typeName)",
                row: row, sqlState: SQLState.numericValueOutOfRange)
        }
    }

    /// NaN and infinity fit `double precision` and `real`; a `numeric` column would store them but read them back
    /// as other numbers (PostgresNIO decodes a numeric NaN as 0), and integer columns cannot hold them at all.
    private static func nonFinite(_ isNaN: Bool, _ sign: FloatingPointSign, _ column: TableSchema.Column) -> String {
        let value = isNaN ? "NaN" : sign == .minus ? "-infinity" : "infinity"
        return
            "\(value) cannot be stored in column '\(column.name)' of type \(column.typeName), which would not give it back; use a double precision or real column to keep it"
    }

    private static func holdsNul(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.count > 0 && memchr(bytes.baseAddress!, 0, bytes.count) != nil }
    }

    private func checkRange(_ value: ColumnValue, row: Int, in column: TableSchema.Column) throws {
        if let integer = value.integer, let (low, high) = Self.integerBounds(column) {
            guard integer < low || integer > high else { return }
            throw fail(
                .invalidValue, "a value is out of range for column '\(column.name)' of type \(column.typeName)",
                row: row, sqlState: SQLState.numericValueOutOfRange)
        }
        let bounds: (min: Decimal, max: Decimal)
        switch column.baseName {
        case "int2", "int4", "int8":
            guard let (low, high) = Self.integerBounds(column) else { return }
            bounds = (Decimal(low), Decimal(high))
        case "numeric":
            guard let (precision, scale) = column.numericPrecision else { return }
            // numeric(p, s) holds values that round, at scale s, to less than 10^(p - s).
            let limit = Decimal(sign: .plus, exponent: precision - scale, significand: 1)
            let halfUnit = Decimal(sign: .plus, exponent: -scale, significand: 5) / 10
            bounds = (-limit + halfUnit, limit - halfUnit)
        default: return
        }
        let number: Decimal =
            switch value {
            case .int2(let v): Decimal(Int(v))
            case .int4(let v): Decimal(Int(v))
            case .int8(let v): Decimal(v)
            case .numeric(let v): v
            default: 0
            }
        if number < bounds.min || number > bounds.max {
            throw fail(
                .invalidValue, "a value is out of range for column '\(column.name)' of type \(column.typeName)",
                row: row, sqlState: SQLState.numericValueOutOfRange)
        }
        // PostgreSQL would round a Decimal to the column's scale: an exact value is kept exactly or refused.
        if case .numeric(var exact) = value, let scale = column.isInteger ? 0 : column.numericPrecision?.scale {
            var rounded = Decimal()
            NSDecimalRound(&rounded, &exact, scale, .plain)
            if rounded != exact {
                throw fail(
                    .invalidValue,
                    "a value has more decimal places than column '\(column.name)' of type \(column.typeName) keeps (\(scale)), so PostgreSQL would round it; round it before writing",
                    row: row)
            }
        }
    }

    /// The range of an integer column, compared without going through `Decimal`.
    private static func integerBounds(_ column: TableSchema.Column) -> (Int64, Int64)? {
        switch column.baseName {
        case "int2": (Int64(Int16.min), Int64(Int16.max))
        case "int4": (Int64(Int32.min), Int64(Int32.max))
        case "int8": (Int64.min, Int64.max)
        default: nil
        }
    }

    private func fail(_ code: StructPostgresError.Code, _ message: String, row: Int, sqlState: String? = nil) -> StructPostgresError {
        StructPostgresError(
            code, "\(entity).\(property): \(message)", sqlState: sqlState, entity: entity, table: table,
            column: column.name, property: property, rowKey: rowKey(row))
    }
}

extension ColumnValue {
    /// The value of an integer case.
    fileprivate var integer: Int64? {
        switch self {
        case .int2(let value): Int64(value)
        case .int4(let value): Int64(value)
        case .int8(let value): value
        default: nil
        }
    }
}
