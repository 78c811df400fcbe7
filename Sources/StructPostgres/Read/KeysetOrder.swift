import NIOCore
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// The order of a fetch by pages: its sort keys, then the columns of the entity's unique key as tie-breakers (in the
/// direction of the last sort key), each with where its NULLs go. A page continues after the last row of the one
/// before with a condition on these columns ("comes after"), never with an offset, so rows inserted or deleted
/// meanwhile neither repeat nor skip the rows that stay.
struct KeysetOrder: Sendable {
    struct Term: Sendable, Equatable {
        let column: String
        let ascending: Bool
        let nullsFirst: Bool
        /// The column may hold NULL (not declared `NOT NULL`).
        let nullable: Bool
    }

    let terms: [Term]
    /// A digest of the table and the terms: what a cursor keeps to recognize the order it was made for.
    let digest: UInt64

    /// The order of `sort` on `description`'s table, tie-broken by its unique key.
    /// - Throws: `undefinedColumn` for a sort key that names no column of the table.
    init(_ sort: [SortKey], _ description: EntityDescription) throws {
        var terms: [Term] = []
        for key in sort {
            _ = try key.sql(for: description)
            let column = try description.column(for: key.key)
            // A column sorted twice orders by its first term only.
            guard !terms.contains(where: { $0.column == column }) else { continue }
            let nullsFirst = key.nulls == .first || (key.nulls == .default && !key.ascending)
            terms.append(
                Term(column: column, ascending: key.ascending, nullsFirst: nullsFirst, nullable: Self.nullable(column, description)))
        }
        let ascending = terms.last?.ascending ?? true
        for column in description.keyColumns where !terms.contains(where: { $0.column == column }) {
            terms.append(Term(column: column, ascending: ascending, nullsFirst: !ascending, nullable: Self.nullable(column, description)))
        }
        self.terms = terms
        var writer = FingerprintWriter()
        writer.text(description.schema.table)
        for term in terms {
            writer.text(term.column)
            writer.byte(UInt8(term.ascending ? 1 : 0) | UInt8(term.nullsFirst ? 2 : 0))
        }
        digest = writer.digest
    }

    private static func nullable(_ column: String, _ description: EntityDescription) -> Bool {
        !(description.schema.columns[column]?.notNull ?? false)
    }

    /// `ORDER BY`'s terms, every column under `qualifier`, NULLs placed explicitly.
    func orderBy(qualifier: String) -> String {
        terms.map { term in
            "\(qualifier).\(SQLIdentifier.quote(term.column)) \(term.ascending ? "ASC" : "DESC") NULLS \(term.nullsFirst ? "FIRST" : "LAST")"
        }.joined(separator: ", ")
    }

    /// The conditions of the rows that come after a row whose order columns hold `cells` (one per term), its values
    /// bound as the server sent them: one condition, or two when the first column may hold NULL and its NULLs come
    /// after the row (every row the first selects comes before every row the second does). Each is one a B-tree index
    /// on the columns serves as a range: rows of NOT NULL columns sorted in one direction compare as one row value
    /// (`(a, b) > ($1, $2)`), others are bounded by the first column (`a >= $1 AND ...`), NULLs apart.
    func segments(after cells: [PagePosition.Cell], qualifier: String, into statement: inout Statement) -> [String] {
        let columns = terms.map { "\(qualifier).\(SQLIdentifier.quote($0.column))" }
        let parameters = cells.map { cell -> String? in cell.bytes.map { statement.bind(cell: RawCell(cell, bytes: $0)) } }
        let first = terms[0]
        let sameDirection = terms.allSatisfy { $0.ascending == first.ascending }
        func equal(_ index: Int) -> String {
            parameters[index].map { "\(columns[index]) = \($0)" } ?? "\(columns[index]) IS NULL"
        }
        /// Strictly after on term `index`; `nil`: no row is (NULL sorted last, and the row holds NULL).
        func after(_ index: Int) -> String? {
            let term = terms[index]
            guard let parameter = parameters[index] else {
                guard term.nullsFirst else { return nil }
                return term.nullable ? "\(columns[index]) IS NOT NULL" : "TRUE"
            }
            let comparison = "\(columns[index]) \(term.ascending ? ">" : "<") \(parameter)"
            return term.nullable && !term.nullsFirst ? "(\(comparison) OR \(columns[index]) IS NULL)" : comparison
        }
        /// After on the terms past the first, the first being equal; `nil`: no row is.
        var rest: String? {
            let alternatives = terms.indices.dropFirst().compactMap { index in
                after(index).map { ((1..<index).map(equal) + [$0]).joined(separator: " AND ") }
            }
            return alternatives.isEmpty ? nil : "(" + alternatives.map { "(\($0))" }.joined(separator: " OR ") + ")"
        }
        guard let value = parameters[0] else {
            // The row holds NULL in the first column: the rest of its NULLs, then (NULLs first) every value.
            let nulls = rest.map { "\(columns[0]) IS NULL AND \($0)" }
            let values = first.nullsFirst ? "\(columns[0]) IS NOT NULL" : nil
            let segments = [nulls, values].compactMap { $0 }
            return segments.isEmpty ? ["FALSE"] : segments
        }
        let within: String
        if sameDirection, !parameters.contains(nil), terms.dropFirst().allSatisfy({ !$0.nullable }) {
            let values = parameters.compactMap { $0 }
            within = "(\(columns.joined(separator: ", "))) \(first.ascending ? ">" : "<") (\(values.joined(separator: ", ")))"
        } else {
            let strictly = "\(columns[0]) \(first.ascending ? ">" : "<") \(value)"
            within = "\(columns[0]) \(first.ascending ? ">=" : "<=") \(value) AND " + (rest.map { "(\(strictly) OR \($0))" } ?? strictly)
        }
        // NULLs sorted last come after every value.
        return first.nullable && !first.nullsFirst ? [within, "\(columns[0]) IS NULL"] : [within]
    }
}

/// A cell of an earlier result bound again as it was sent: its type, its format, its bytes.
struct RawCell: PostgresDynamicTypeEncodable {
    let dataType: PostgresDataType
    let format: PostgresFormat
    let bytes: [UInt8]

    init(_ cell: PagePosition.Cell, bytes: [UInt8]) {
        dataType = PostgresDataType(cell.dataType)
        format = cell.binary ? .binary : .text
        self.bytes = bytes
    }

    var psqlType: PostgresDataType { dataType }
    var psqlFormat: PostgresFormat { format }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeBytes(bytes)
    }
}

extension Statement {
    /// Binds a cell of an earlier result; returns its placeholder. Logs show it as the cursor's.
    mutating func bind(cell: RawCell) -> String {
        values.append(.text("(a page cursor's value)"))
        bindings.append(cell)
        types.append(cell.dataType)
        return "$\(bindings.count)"
    }
}
