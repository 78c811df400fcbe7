import Foundation

/// A contender's target relative to another: the library's figure over hand-written's (or its speedup over Fluent's).
enum Target {
    case atLeast(Double)
    case atMost(Double)
    case none

    func met(by ratio: Double) -> Bool? {
        switch self {
        case .atLeast(let bound): ratio >= bound
        case .atMost(let bound): ratio <= bound
        case .none: nil
        }
    }

    var text: String {
        switch self {
        case .atLeast(let bound): ">= \(format(bound))"
        case .atMost(let bound): "<= \(format(bound))"
        case .none: "-"
        }
    }
}

/// Prints one line per workload and contender as results come, and a Markdown table at the end.
struct Report {
    enum Better { case higher, lower }

    struct Result {
        let workload: String
        let unit: String
        let better: Better
        let handWritten: Double
        let library: Double
        let fluent: Double?
        let target: Target
        let fluentTarget: Target
        /// The library's figure over hand-written's (throughput ratio, or latency ratio for latencies); for a
        /// workload run in rounds, the median of each round's ratio.
        let ratio: Double
        /// How many times faster than Fluent the library is; for a workload run in rounds, see `add(_:unit:rounds:...)`.
        let speedup: Double?
    }

    private(set) var results: [Result] = []

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
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
    }

    /// A workload run in rounds (see `Bench.rounds`): each contender's median figure, and as the ratios the
    /// medians of the rounds' ratios. The contenders of a round ran back to back, so a slow spell of the machine
    /// (it shares two cores with the server) weighs on both figures of one ratio rather than on one contender's
    /// median; every round's ratios are printed too.
    ///
    /// Fluent's speedup is paired the same way when Fluent ran every round. When it ran only the first few (its
    /// call lasts tens of times longer than the library's, W1 and the W6 read), a round's pair shares no spell
    /// of the machine: one Fluent call spans dozens of the library's, so its speedup is the library's median
    /// over all rounds against Fluent's median.
    mutating func add(
        _ workload: String, unit: String, rounds figures: [Contender: [Double]], target: Target, fluentTarget: Target = .none
    ) {
        let (handWritten, library) = (figures[.handWritten]!, figures[.library]!)
        let ratios = zip(library, handWritten).map { $0 / $1 }
        let speedups = figures[.fluent].map { fluent in zip(library, fluent).map { $0 / $1 } }
        let pairedSpeedup = speedups.flatMap { $0.count == library.count ? Self.median($0) : nil }
        add(
            workload, unit: unit, better: .higher, handWritten: Self.median(handWritten), library: Self.median(library),
            fluent: figures[.fluent].map(Self.median), ratio: Self.median(ratios), speedup: pairedSpeedup,
            target: target, fluentTarget: fluentTarget)
        if ratios.count > 1 { note(workload, "each round", "StructPostgres / hand-written: " + ratios.map(format).joined(separator: " ")) }
        if let speedups, pairedSpeedup != nil, speedups.count > 1 {
            note(workload, "each round", "StructPostgres / Fluent: " + speedups.map(format).joined(separator: " "))
        }
    }

    mutating func add(
        _ workload: String, unit: String, better: Better, handWritten: Double, library: Double, fluent: Double? = nil,
        ratio: Double? = nil, speedup: Double? = nil, target: Target, fluentTarget: Target = .none
    ) {
        let result = Result(
            workload: workload, unit: unit, better: better, handWritten: handWritten, library: library, fluent: fluent,
            target: target, fluentTarget: fluentTarget, ratio: ratio ?? library / handWritten,
            speedup: speedup ?? fluent.map { better == .higher ? library / $0 : $0 / library })
        results.append(result)
        say(line(workload, "hand-written", handWritten, unit, "1.00"))
        say(line(workload, "StructPostgres", library, unit, format(result.ratio), verdict(result.ratio, target)))
        if let fluent, let speedup = result.speedup {
            say(
                line(
                    workload, "Fluent", fluent, unit, format(fluent / handWritten),
                    "StructPostgres is \(format(speedup))x Fluent " + verdict(speedup, fluentTarget)))
        }
    }

    /// p50 (targets: at most 1.10 x hand-written code on a connection it holds, 2x faster than Fluent) and p99 of latencies in µs.
    mutating func addLatencies(_ workload: String, _ latencies: [Contender: [Double]]) {
        for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
            add(
                "\(workload) \(name)", unit: "µs", better: .lower,
                handWritten: Self.percentile(latencies[.handWritten]!, p), library: Self.percentile(latencies[.library]!, p),
                fluent: latencies[.fluent].map { Self.percentile($0, p) },
                target: name == "p50" ? .atMost(1.10) : .none, fluentTarget: name == "p50" ? .atLeast(2) : .none)
        }
    }

    /// Prints each contender's median CPU time of a call, the client's and (when measured) the server's,
    /// in the terms `per` gives for a number of seconds.
    func noteCPU(_ workload: String, _ cpu: [Contender: [CPUTime]], per: (Double) -> String) {
        for contender in Contender.allCases {
            guard let times = cpu[contender] else { continue }
            var text = "CPU: client \(per(Self.median(times.map(\.client))))"
            let server = times.compactMap(\.server)
            if !server.isEmpty { text += ", server \(per(Self.median(server)))" }
            note(workload, contender.rawValue, text + " (medians)")
        }
    }

    /// Prints an extra figure (memory, say) that has no contender ratio.
    func note(_ workload: String, _ contender: String, _ text: String) {
        say(
            workload.padding(toLength: 52, withPad: " ", startingAt: 0) + contender.padding(toLength: 16, withPad: " ", startingAt: 0)
                + text)
    }

    /// The results as a Markdown table, for the README.
    func markdown() -> String {
        var lines = [
            "| Workload | hand-written PostgresNIO | StructPostgres | Fluent | StructPostgres / hand-written (target) | StructPostgres vs Fluent (target) |",
            "|---|---:|---:|---:|---|---|",
        ]
        for result in results {
            let fluent = result.fluent.map { "\(figure($0)) \(result.unit)" } ?? "not run"
            let speedup = result.speedup.map { "\(format($0))x (\(result.fluentTarget.text)) \(mark($0, result.fluentTarget))" } ?? "-"
            lines.append(
                "| \(result.workload) | \(figure(result.handWritten)) \(result.unit) | \(figure(result.library)) \(result.unit) | \(fluent) | "
                    + "\(format(result.ratio)) (\(result.target.text)) \(mark(result.ratio, result.target)) | \(speedup) |")
        }
        return lines.joined(separator: "\n")
    }

    private func verdict(_ value: Double, _ target: Target) -> String {
        switch target.met(by: value) {
        case true?: "target \(target.text): met"
        case false?: "target \(target.text): MISSED"
        case nil: ""
        }
    }

    private func mark(_ value: Double, _ target: Target) -> String {
        switch target.met(by: value) {
        case true?: "met"
        case false?: "**missed**"
        case nil: ""
        }
    }

    private func line(_ workload: String, _ contender: String, _ value: Double, _ unit: String, _ ratio: String, _ note: String = "")
        -> String
    {
        workload.padding(toLength: 52, withPad: " ", startingAt: 0)
            + contender.padding(toLength: 16, withPad: " ", startingAt: 0)
            + (figure(value) + " " + unit).padding(toLength: 22, withPad: " ", startingAt: 0)
            + ratio.padding(toLength: 7, withPad: " ", startingAt: 0) + note
    }

    func figure(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : String(format: "%.1f", value)
    }
}

func format(_ value: Double) -> String { String(format: "%.2f", value) }

/// The process's memory, from /proc (Linux): current and peak resident set size, and resetting the peak.
enum Memory {
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    static var peakMB: Double { field("VmHWM") }
    static var currentMB: Double { field("VmRSS") }

    private static func field(_ name: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }
}

/// CPU time used so far, in seconds: by this process (every thread) and, when the bench started the server
/// itself, by every `postgres` process on this machine. A workload on a CPU-bound machine costs what both use.
struct CPUTime {
    var client: Double
    var server: Double?

    static func now(server measuresServer: Bool) -> CPUTime {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return CPUTime(client: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9, server: measuresServer ? serverSeconds() : nil)
    }

    static func - (end: CPUTime, start: CPUTime) -> CPUTime {
        CPUTime(client: end.client - start.client, server: end.server.flatMap { end in start.server.map { end - $0 } })
    }

    private static func serverSeconds() -> Double {
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        var ticks = 0.0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) {
            // `pid (comm) state ppid ...`: utime and stime are the 14th and 15th fields.
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8), stat.contains(" (postgres) "),
                let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 12
            else { continue }
            ticks += (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        }
        return ticks / ticksPerSecond
    }
}

/// Prints a line at once (stdout is block-buffered when piped, and a failed run should still show its lines).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
