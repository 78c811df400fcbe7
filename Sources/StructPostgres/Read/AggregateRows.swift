import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// The rows of a query of figures, with what each column is, decoded into the types the caller asked for.
struct AggregateRows: Sendable {
    let cells: ResultCells
    let entity: String
    let table: String
    /// What each column is, for messages: `authorID`, `sum(price)`.
    let labels: [String]
    /// The columns that hold an average, which a `Decimal` takes rounded to its 38 digits rather than refused.
    let averages: Set<Int>

    var count: Int { cells.count }

    /// The cell at `row` and `column` as a `T`: NULL is nil for an optional `T`; a number beyond `T`'s range is
    /// refused by name, never wrapped or rounded (but for a `Decimal` average).
    func value<T: Decodable>(_ type: T.Type, row: Int, column: Int) throws -> T {
        if let optional = T.self as? any OptionalCell.Type {
            guard cells.bytes(row: row, column: column) != nil else { return optional.none as! T }
            return try optional.decodingWrapped(self, row: row, column: column) as! T
        }
        let label = labels[column]
        guard var bytes = cells.bytes(row: row, column: column) else {
            throw failure(.decoding, "\(label) is NULL, which \(T.self) cannot hold: ask for an optional", column: column)
        }
        let dataType = cells.dataTypes[column]
        if T.self == Decimal.self, dataType == .numeric, averages.contains(column) {
            let digits = try NumericText.digits(of: cells.cell(row: row, column: column))
            guard let rounded = Self.rounded(digits, significantDigits: 38),
                let value = Decimal(string: rounded, locale: Locale(identifier: "en_US_POSIX"))
            else {
                throw failure(.invalidValue, "\(label) is \(digits), beyond the range of Decimal", column: column)
            }
            return value as! T
        }
        do {
            return try CellDecoding.decode(T.self, &bytes, dataType, cells.formats[column]) { cells.cell(row: row, column: column) }
        } catch let error as StructPostgresError {
            throw error
        } catch {
            if dataType == .numeric, let digits = try? NumericText.digits(of: cells.cell(row: row, column: column)) {
                throw failure(
                    .invalidValue, "\(label) is \(digits), which \(T.self) cannot hold exactly (no figure is wrapped or rounded)",
                    column: column)
            }
            throw failure(.decoding, "\(label) (\(dataType)) cannot be decoded as \(T.self)", column: column)
        }
    }

    private func failure(_ code: StructPostgresError.Code, _ message: String, column: Int) -> StructPostgresError {
        StructPostgresError(code, message, entity: entity, table: table, property: cells.names[column])
    }

    /// `digits` (a `numeric`'s text) rounded half away from zero to `significantDigits`, as PostgreSQL rounds;
    /// `nil` when its whole part alone has more.
    static func rounded(_ digits: String, significantDigits: Int) -> String? {
        let negative = digits.hasPrefix("-")
        let unsigned = negative ? String(digits.dropFirst()) : digits
        let parts = unsigned.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = String(parts[0].drop { $0 == "0" })
        let fraction = parts.count > 1 ? String(parts[1]) : ""
        guard whole.count <= significantDigits else { return nil }
        // The fraction's leading zeros are not significant when there is no whole part.
        let leadingZeros = whole.isEmpty ? fraction.prefix { $0 == "0" }.count : 0
        let kept = significantDigits - whole.count + leadingZeros
        guard fraction.count > kept else { return digits }
        var figures = Array((whole + fraction.prefix(kept)).utf8).map { Int($0) - 48 }
        if Int(Array(fraction.utf8)[kept]) - 48 >= 5 {
            var index = figures.count - 1
            while index >= 0 {
                figures[index] += 1
                if figures[index] < 10 { break }
                figures[index] = 0
                index -= 1
            }
            if index < 0 { figures.insert(1, at: 0) }
        }
        let wholeCount = figures.count - kept
        let text = figures.map(String.init).joined()
        let wholeText = wholeCount > 0 ? String(text.prefix(wholeCount)) : "0"
        let fractionText = String(text.suffix(kept))
        return (negative ? "-" : "") + wholeText + (fractionText.isEmpty ? "" : "." + fractionText)
    }
}

/// An optional of a `Decodable`, told apart at run time: NULL is its `none`.
private protocol OptionalCell {
    static var none: Self { get }
    static func decodingWrapped(_ rows: AggregateRows, row: Int, column: Int) throws -> Self
}

/// `none` is the enum's own case.
extension Optional: OptionalCell where Wrapped: Decodable {
    fileprivate static func decodingWrapped(_ rows: AggregateRows, row: Int, column: Int) throws -> Self {
        .some(try rows.value(Wrapped.self, row: row, column: column))
    }
}
