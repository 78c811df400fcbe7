import Foundation

/// Work on many rows spread over two threads or more: decoding a large result, converting, encoding and
/// checking a large batch. Errors come out as working in order would meet them; a cancellation of the calling
/// task is noticed once the work is done.
///
/// The closures run on other threads without being `@Sendable`: each must work on what it alone changes
/// (its own half of the rows, its own decoder or encoder), reading only what nothing changes meanwhile.
enum ParallelRows {
    /// Rows from which the work is split, on more than one core: below it, the threads cost more than they save.
    static let minimum = ProcessInfo.processInfo.activeProcessorCount > 1 ? 4_096 : Int.max

    /// Runs `first` and `second` at once. When both throw, the error is `first`'s.
    static func both<A, B>(_ first: () throws -> A, _ second: () throws -> B) throws -> (A, B) {
        try withoutActuallyEscaping(first) { first in
            try withoutActuallyEscaping(second) { second in
                let work = Unchecked(value: (first, second))
                let results = Pair<A, B>()
                DispatchQueue.concurrentPerform(iterations: 2) { index in
                    if index == 0 { results.first = Result { try work.value.0() } } else { results.second = Result { try work.value.1() } }
                }
                return (try results.first!.get(), try results.second!.get())
            }
        }
    }

    /// `body` on the first and on the second half of `rows` at once; when both throw, the error is the first half's.
    static func halves<T>(_ rows: Range<Int>, _ body: (Range<Int>) throws -> T) throws -> (T, T) {
        let middle = rows.lowerBound + rows.count / 2
        return try both({ try body(rows.lowerBound..<middle) }, { try body(middle..<rows.upperBound) })
    }

    /// `body(index)` for every index of `0..<count`, spread over the cores; the first error in index order.
    static func map<T>(_ count: Int, _ body: (Int) throws -> T) throws -> [T] {
        try withoutActuallyEscaping(body) { body in
            let slots = UnsafeMutableBufferPointer<Result<T, any Error>?>.allocate(capacity: count)
            slots.initialize(repeating: nil)
            defer {
                _ = slots.deinitialize()
                slots.deallocate()
            }
            let work = Unchecked(value: (body, slots))
            DispatchQueue.concurrentPerform(iterations: count) { index in work.value.1[index] = Result { try work.value.0(index) } }
            return try slots.map { try $0!.get() }
        }
    }
}

/// What `concurrentPerform` hands to its threads: each uses its own part, and it returns after all have.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
}

/// Each thread writes its own property.
private final class Pair<A, B>: @unchecked Sendable {
    var first: Result<A, any Error>?
    var second: Result<B, any Error>?
}
