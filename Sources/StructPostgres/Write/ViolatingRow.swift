import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Finds the row of a batch that a constraint violation is about: the batch is encoded again (only on this error
/// path) and its rows compared with what PostgreSQL reported: the column a null broke (`NOT NULL`), or the key values
/// its `DETAIL` quotes (unique and foreign keys), compared as PostgreSQL prints them and never shown. The error then
/// names the row by its unique key, as a value check does.
struct ViolatingRow: Sendable {
    private enum Clue {
        /// The values of `columns`, as PostgreSQL printed them; `last`: of several rows, the last (a unique key
        /// repeated in the batch is refused on its second row), otherwise the first.
        case values(columns: [String], printed: String, last: Bool)
        case null(column: String)
    }

    private let find: @Sendable (Clue) -> String?

    init<E: EntityProtocol>(_ entities: ArraySlice<E>, description: EntityDescription) {
        find = { clue in Self.rowKey(in: entities, description: description, clue) }
    }

    /// The key of the row (`uuid=5F0C…`) that `error` is about, or `nil` when it cannot be told.
    func rowKey(for error: StructPostgresError) -> String? {
        switch error.sqlState {
        case SQLState.notNullViolation?:
            return error.column.flatMap { find(.null(column: $0)) }
        case SQLState.uniqueViolation?, SQLState.foreignKeyViolation?:
            guard let key = error.serverDetail.flatMap({ keyInDetail($0.text) }) else { return nil }
            let (columns, printed) = key
            let names = columns.components(separatedBy: ", ").map { $0.hasPrefix("\"") ? String($0.dropFirst().dropLast()) : $0 }
            return find(.values(columns: names, printed: printed, last: error.sqlState == SQLState.uniqueViolation))
        default:
            return nil
        }
    }

    private static func rowKey<E: EntityProtocol>(in entities: ArraySlice<E>, description: EntityDescription, _ clue: Clue) -> String? {
        guard let batch = try? BatchColumns(entities, description: description) else { return nil }
        let keys = description.keyColumns.compactMap { name in batch.columns.first { $0.name == name } }
        guard keys.count == description.keyColumns.count else { return nil }
        let rows: [Int]
        let matches: (Int) -> Bool
        switch clue {
        case .null(let column):
            guard let values = batch.columns.first(where: { $0.name == column })?.values else { return nil }
            rows = Array(0..<batch.rowCount)
            matches = { values[$0].isNull }
        case .values(let columns, let printed, let last):
            let matched = columns.compactMap { name in batch.columns.first { $0.name == name } }
            guard matched.count == columns.count else { return nil }
            rows = last ? Array((0..<batch.rowCount).reversed()) : Array(0..<batch.rowCount)
            matches = { row in
                let texts = matched.compactMap { $0.values[row].printedByPostgreSQL }
                return texts.count == matched.count && texts.joined(separator: ", ") == printed
            }
        }
        guard let row = rows.first(where: matches) else { return nil }
        return keys.map { "\($0.name)=\($0.values[row].keyDescription)" }.joined(separator: ", ")
    }
}

extension ColumnValue {
    /// The value as PostgreSQL prints it in a `DETAIL`, for the types where that is unambiguous.
    fileprivate var printedByPostgreSQL: String? {
        switch self {
        case .text(let value): value
        case .uuid(let value): value.uuidString.lowercased()
        case .int2(let value): "\(value)"
        case .int4(let value): "\(value)"
        case .int8(let value): "\(value)"
        case .bool(let value): value ? "t" : "f"
        default: nil
        }
    }
}
