import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Work on many rows spread over two cores or more: decoding a large result, converting, encoding and checking a
/// large batch. Errors come out as working in order would meet them.
///
/// The calling task does one part itself and awaits the others on child tasks of the global concurrent executor:
/// it suspends while it waits, and no thread of the cooperative pool is blocked. Each part inherits the caller's
/// cancellation.
///
/// The closures run on other threads without being `@Sendable`: each must work on what it alone changes
/// (its own half of the rows, its own decoder or encoder), reading only what nothing changes meanwhile.
enum ParallelRows {
    /// Rows from which the work is split, on more than one core: below it, the threads cost more than they save.
    static let minimum = ProcessInfo.processInfo.activeProcessorCount > 1 ? 4_096 : Int.max

    /// Runs `first` and `second` at once. When both throw, the error is `first`'s.
    static func both<A, B>(_ first: @escaping () throws -> A, _ second: () throws -> B) async throws -> (A, B) {
        let work = Unchecked(value: first)
        let results = await withTaskGroup(of: Unchecked<Result<A, any Error>>.self) { group in
            group.addTask(executorPreference: globalConcurrentExecutor) { Unchecked(value: Result { try work.value() }) }
            let second = Result { try second() }
            return Unchecked(value: (await group.next()!.value, second))
        }
        return (try results.value.0.get(), try results.value.1.get())
    }

    /// `body` on the first and on the second half of `rows` at once; when both throw, the error is the first half's.
    static func halves<T>(_ rows: Range<Int>, _ body: @escaping (Range<Int>) throws -> T) async throws -> (T, T) {
        let middle = rows.lowerBound + rows.count / 2
        return try await both({ try body(rows.lowerBound..<middle) }, { try body(middle..<rows.upperBound) })
    }

    /// `body(index)` for every index of `0..<count`, spread over the cores; the first error in index order.
    static func map<T>(_ count: Int, _ body: @escaping (Int) throws -> T) async throws -> [T] {
        guard count > 1 else { return try (0..<count).map(body) }
        let work = Unchecked(value: body)
        let results = await withTaskGroup(of: (Int, Unchecked<Result<T, any Error>>).self) { group in
            for index in 1..<count {
                group.addTask(executorPreference: globalConcurrentExecutor) { (index, Unchecked(value: Result { try work.value(index) })) }
            }
            var slots = [Result<T, any Error>?](repeating: nil, count: count)
            slots[0] = Result { try work.value(0) }
            for await (index, result) in group { slots[index] = result.value }
            return Unchecked(value: slots)
        }
        return try results.value.map { try $0!.get() }
    }
}

/// What crosses to a child task: each part uses its own rows, and the caller reads a result only once its part is done.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
}
