import Foundation

/// What one call costs besides time: how often a thread of the process went to sleep (a hop to a thread that
/// then has to be woken: the expensive part of a call on an idle machine), and how many allocations it made.
///
/// Context switches come from `getrusage` (every thread of the process, finished ones included). Allocations are
/// counted by ordo-one's malloc-interposer when it is preloaded (`scripts/bench.sh --costs` does so); otherwise
/// they are not counted.
struct CallCost: CustomStringConvertible {
    var calls: Int
    var voluntarySwitches: Double
    var involuntarySwitches: Double
    var allocations: Double?
    var allocatedBytes: Double?

    var description: String {
        let allocated =
            allocations.map { "\(format($0)) allocations (\(Int(allocatedBytes ?? 0)) bytes)" }
            ?? "allocations not counted (run with --costs)"
        return
            "\(format(voluntarySwitches)) thread sleeps (\(format(involuntarySwitches)) preemptions), \(allocated) per call over \(calls) calls"
    }

    /// The cost per call of running `call` `count` times, one after the other.
    nonisolated(nonsending) static func measure(_ count: Int, _ call: () async throws -> Void) async rethrows -> CallCost {
        let interposer = Interposer.shared
        let before = usage()
        interposer?.reset()
        interposer?.enable()
        for _ in 0..<count { try await call() }
        interposer?.disable()
        let after = usage()
        let stats = interposer?.statistics()
        return CallCost(
            calls: count,
            voluntarySwitches: Double(after.voluntary - before.voluntary) / Double(count),
            involuntarySwitches: Double(after.involuntary - before.involuntary) / Double(count),
            allocations: stats.map { Double($0.count) / Double(count) },
            allocatedBytes: stats.map { Double($0.bytes) / Double(count) })
    }

    private static func usage() -> (voluntary: Int, involuntary: Int) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (usage.ru_nvcsw, usage.ru_nivcsw)
    }

    /// The counters of a preloaded malloc-interposer, found by name.
    struct Interposer: @unchecked Sendable {
        typealias Void0 = @convention(c) () -> Void
        typealias Stats =
            @convention(c) (
                UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?,
                UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?
            ) -> Void
        let enable: Void0
        let disable: Void0
        let reset: Void0
        let stats: Stats

        static let shared: Interposer? = {
            let handle = dlopen(nil, RTLD_NOW)
            func symbol<T>(_ name: String, _ type: T.Type) -> T? {
                dlsym(handle, name).map { unsafeBitCast($0, to: type) }
            }
            guard let enable = symbol("malloc_interposer_enable", Void0.self),
                let disable = symbol("malloc_interposer_disable", Void0.self),
                let reset = symbol("malloc_interposer_reset", Void0.self), let stats = symbol("malloc_interposer_get_stats", Stats.self)
            else { return nil }
            return Interposer(enable: enable, disable: disable, reset: reset, stats: stats)
        }()

        func statistics() -> (count: Int64, bytes: Int64) {
            var (count, bytes, small, large, frees, freed) = (Int64(0), Int64(0), Int64(0), Int64(0), Int64(0), Int64(0))
            stats(&count, &bytes, &small, &large, &frees, &freed)
            return (count, bytes)
        }
    }
}
