import NIOCore
import StructPostgresCore

/// Reads the frames of PostgreSQL's backend messages from the bytes a connection receives, without decoding
/// them: a type byte and a length, then the body, which is skipped but for an error's fields. It tells when a
/// statement completed, when an error came and when the server was ready for the next query
/// (see ``ReadyForQueryWatcher``). Bytes that cannot be a frame make it give up for good.
struct BackendMessageScanner {
    enum Event: Equatable {
        /// `CommandComplete` or `EmptyQueryResponse`: a statement's execution ended.
        case completed
        /// `ErrorResponse` (or `NoticeResponse`, not reported), with its fields: code byte to value.
        case error([UInt8: String])
        /// `ReadyForQuery`, with the transaction status: `I` idle, `T` in a transaction, `E` in a failed one.
        case ready(UInt8)
    }

    /// The message types a server sends after startup, by type byte.
    private static let types: [Bool] = (0...255).map { "RK23CdcGHWDIEVvnNAtS1sZT".utf8.contains(UInt8($0)) }
    /// An error's body is collected up to this size; a longer one (which PostgreSQL never sends) is cut.
    private static let maximumErrorBody = 1 << 16

    private var header: [UInt8] = []
    private var type: UInt8 = 0
    private var remaining = 0
    private var body: [UInt8] = []
    private(set) var desynchronized = false
    /// How many messages have begun so far: a message's number, to tell what came after a point.
    private(set) var messages = 0

    /// Scans `buffer`, the next bytes received, and hands each event to `handle`, in order. Returns `false`
    /// (now and from then on) once the bytes cannot be frames of backend messages.
    mutating func scan(_ buffer: ByteBuffer, _ handle: (Event) -> Void) -> Bool {
        guard !desynchronized else { return false }
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count, !desynchronized {
                if remaining > 0 {
                    let taken = min(remaining, bytes.count - index)
                    if type == UInt8(ascii: "E") || type == UInt8(ascii: "Z") {
                        let room = max(0, Self.maximumErrorBody - body.count)
                        body.append(contentsOf: bytes[index..<(index + min(taken, room))])
                    }
                    index += taken
                    remaining -= taken
                    if remaining == 0 { finish(handle) }
                    continue
                }
                if header.isEmpty, bytes.count - index >= 5 {
                    // The usual case: a whole header in these bytes.
                    let length =
                        Int(bytes[index + 1]) << 24 | Int(bytes[index + 2]) << 16 | Int(bytes[index + 3]) << 8 | Int(bytes[index + 4])
                    begin(type: bytes[index], length: length, handle)
                    index += 5
                    continue
                }
                header.append(bytes[index])
                index += 1
                if header.count == 5 {
                    let length = Int(header[1]) << 24 | Int(header[2]) << 16 | Int(header[3]) << 8 | Int(header[4])
                    let type = header[0]
                    header.removeAll(keepingCapacity: true)
                    begin(type: type, length: length, handle)
                }
            }
        }
        return !desynchronized
    }

    private mutating func begin(type: UInt8, length: Int, _ handle: (Event) -> Void) {
        self.type = type
        messages &+= 1
        guard Self.types[Int(type)], length >= 4, length < 1 << 30, type != UInt8(ascii: "Z") || length == 5 else {
            desynchronized = true
            return
        }
        remaining = length - 4
        if remaining == 0 { finish(handle) }
    }

    private mutating func finish(_ handle: (Event) -> Void) {
        defer { body.removeAll(keepingCapacity: true) }
        switch type {
        case UInt8(ascii: "C"), UInt8(ascii: "I"): handle(.completed)
        case UInt8(ascii: "Z"): handle(.ready(body.first ?? 0))
        case UInt8(ascii: "E"): handle(.error(Self.fields(body)))
        default: break
        }
    }

    /// An error's fields: a code byte and a NUL-terminated value each, a NUL after the last.
    static func fields(_ body: [UInt8]) -> [UInt8: String] {
        var fields: [UInt8: String] = [:]
        var index = 0
        while index < body.count, body[index] != 0 {
            let code = body[index]
            let start = index + 1
            var end = start
            while end < body.count, body[end] != 0 { end += 1 }
            fields[code] = String(decoding: body[start..<end], as: UTF8.self)
            index = end + 1
        }
        return fields
    }
}
