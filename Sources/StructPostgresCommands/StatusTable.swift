import Foundation
import StructPostgres

/// `migrate status` as a text table.
enum StatusTable {
    static func render(_ rows: [MigrationStatus]) -> String {
        guard !rows.isEmpty else { return "No migrations." }
        let formatter = ISO8601DateFormatter()
        var table = [["Version", "Name", "State", "Applied at", "Time"]]
        for row in rows {
            var state = row.state.rawValue
            if let statement = row.failedStatement { state += " at statement \(statement)" + (row.failedLine.map { ", line \($0)" } ?? "") }
            table.append([
                String(row.version), row.name, state, row.appliedAt.map(formatter.string(from:)) ?? "",
                row.executionMilliseconds.map { "\($0) ms" } ?? "",
            ])
        }
        let widths = (0..<5).map { column in table.map { $0[column].count }.max()! }
        return table.map { cells in
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}
