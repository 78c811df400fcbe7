import Foundation

/// Times and prints: one line per workload and contender, with the ratio to hand-written PostgresNIO.
struct Report {
    enum Better { case higher, lower }

    private var lines: [String] = []

    /// Seconds taken by `body`.
    static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    /// Prints the hand-written figure and the library's, with the library's ratio and the target.
    mutating func compare(_ workload: String, unit: String, better: Better, handWritten: Double, library: Double, target: String) {
        let ratio = library / handWritten
        print(line(workload, "hand-written", handWritten, unit, "1.00", ""))
        print(line(workload, "StructPostgres", library, unit, String(format: "%.2f", ratio), "target \(target)"))
        lines.append(workload)
    }

    private func line(_ workload: String, _ contender: String, _ value: Double, _ unit: String, _ ratio: String, _ note: String) -> String {
        let figure = value >= 100 ? String(format: "%.0f", value) : String(format: "%.3f", value)
        return workload.padding(toLength: 34, withPad: " ", startingAt: 0)
            + contender.padding(toLength: 16, withPad: " ", startingAt: 0)
            + (figure + " " + unit).padding(toLength: 22, withPad: " ", startingAt: 0)
            + ratio.padding(toLength: 7, withPad: " ", startingAt: 0) + note
    }
}
