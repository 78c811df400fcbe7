import Foundation

/// Finds the row of a batch that a unique violation is about, from the key PostgreSQL's `DETAIL` quotes: the batch
/// is encoded again (only on this error path) and its rows' values compared as PostgreSQL prints them. The values
/// are compared, never shown: the error names the row by its unique key, as a value check does.
struct ViolatingRow: Sendable {
    private let find: @Sendable (_ columns: [String], _ values: String) -> String?

    init<E: EntityProtocol>(_ entities: ArraySlice<E>, description: EntityDescription) {
        find = { columns, values in Self.rowKey(in: entities, description: description, columns: columns, values: values) }
    }

    /// The key of the row (`uuid=5F0C…`) that `error` is about, when it is a unique violation whose key values can be
    /// told apart; of two rows of the batch with the same values, the later, which is the one PostgreSQL refused.
    func rowKey(for error: StructPostgresError) -> String? {
        guard error.sqlState == SQLState.uniqueViolation, let detail = error.serverDetail?.text,
              let columns = keyColumnsInDetail(detail), let values = uniqueKeyValuesInDetail(detail) else { return nil }
        let names = columns.components(separatedBy: ", ").map { $0.hasPrefix("\"") ? String($0.dropFirst().dropLast()) : $0 }
        return find(names, values)
    }

    private static func rowKey<E: EntityProtocol>(
        in entities: ArraySlice<E>, description: EntityDescription, columns: [String], values: String
    ) -> String? {
        guard let batch = try? BatchColumns(entities, description: description) else { return nil }
        let matched = columns.compactMap { name in batch.columns.first { $0.name == name } }
        let keys = description.keyColumns.compactMap { name in batch.columns.first { $0.name == name } }
        guard matched.count == columns.count, keys.count == description.keyColumns.count else { return nil }
        for row in stride(from: batch.rowCount - 1, through: 0, by: -1) {
            let printed = matched.compactMap { $0.values[row].printedByPostgreSQL }
            if printed.count == matched.count, printed.joined(separator: ", ") == values {
                return keys.map { "\($0.name)=\($0.values[row].keyDescription)" }.joined(separator: ", ")
            }
        }
        return nil
    }
}

private extension ColumnValue {
    /// The value as PostgreSQL prints it in a `DETAIL`, for the types where that is unambiguous.
    var printedByPostgreSQL: String? {
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
