import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Reads the records of a JSON payload one at a time — the elements of a top-level array, or one object —
/// without holding more than the current chunk: a 200 MB file is read 1 MB at a time.
struct JSONRecordReader {
    private let handle: FileHandle?
    private var buffer: [UInt8]
    /// Offset of `buffer[0]` in the whole payload.
    private var bufferOffset = 0
    private var position = 0
    private var state = State.start
    private var atEndOfInput: Bool
    private(set) var recordsRead = 0

    private enum State { case start, inArray, afterElement, done }

    static let chunkSize = 1 << 20

    init(data: Data) {
        handle = nil
        buffer = [UInt8](data)
        atEndOfInput = true
    }

    init(contentsOf url: URL) throws {
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw StructPostgresError(.invalidConfiguration, "cannot open the JSON file \(url.path): \(error.localizedDescription)")
        }
        buffer = []
        atEndOfInput = false
    }

    /// The next record's bytes and their offset in the payload; `nil` after the last.
    mutating func next() throws -> (bytes: ArraySlice<UInt8>, offset: Int)? {
        while true {
            switch state {
            case .done:
                return nil
            case .start:
                try skipByteOrderMark()
                guard let byte = try peekSkippingWhitespace() else { throw malformed("the payload is empty") }
                if byte == UInt8(ascii: "[") {
                    position += 1
                    state = .inArray
                    if try peekSkippingWhitespace() == UInt8(ascii: "]") {
                        position += 1
                        try finish()
                        return nil
                    }
                } else {
                    let record = try element()
                    try finish()
                    recordsRead += 1
                    return record
                }
            case .inArray:
                let record = try element()
                state = .afterElement
                recordsRead += 1
                return record
            case .afterElement:
                switch try peekSkippingWhitespace() {
                case UInt8(ascii: ",")?:
                    position += 1
                    state = .inArray
                case UInt8(ascii: "]")?:
                    position += 1
                    try finish()
                    return nil
                case nil:
                    throw malformed("the array is not closed after record \(recordsRead - 1)")
                default:
                    throw malformed("expected ',' or ']' after record \(recordsRead - 1)")
                }
            }
        }
    }

    /// Scans one value, counting brackets outside strings, and returns its bytes.
    private mutating func element() throws -> (bytes: ArraySlice<UInt8>, offset: Int) {
        guard let first = try peekSkippingWhitespace() else { throw malformed("the payload ends where a record was expected") }
        guard first != UInt8(ascii: ","), first != UInt8(ascii: "]"), first != UInt8(ascii: "}") else {
            throw malformed("expected a record, found '\(Character(UnicodeScalar(first)))'")
        }
        compact()
        let start = position
        var depth = 0
        var inString = false
        var escaped = false
        var index = position
        while true {
            if index == buffer.count {
                guard try readMore() else {
                    if depth == 0 && !inString { break }
                    position = start
                    throw malformed("the payload ends inside record \(recordsRead)")
                }
                continue
            }
            let byte = buffer[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { break }
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        position = index
                        return (buffer[start..<index], bufferOffset + start)
                    }
                    index += 1
                    continue
                case UInt8(ascii: ","), 0x20, 0x0A, 0x0D, 0x09:
                    if depth == 0 { break }
                    index += 1
                    continue
                default: break
                }
                if depth == 0, [UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), 0x20, 0x0A, 0x0D, 0x09].contains(byte),
                    index > start
                {
                    break
                }
            }
            index += 1
        }
        position = index
        return (buffer[start..<index], bufferOffset + start)
    }

    private mutating func finish() throws {
        if try peekSkippingWhitespace() != nil { throw malformed("unexpected text after the payload") }
        state = .done
    }

    /// Skips the UTF-8 byte order mark some editors and exports put first, which JSON parsers may ignore.
    private mutating func skipByteOrderMark() throws {
        guard bufferOffset + position == 0 else { return }
        while buffer.count < 3, try readMore() {}
        if buffer.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
    }

    private mutating func peekSkippingWhitespace() throws -> UInt8? {
        while true {
            while position < buffer.count {
                let byte = buffer[position]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return byte }
                position += 1
            }
            guard try readMore() else { return nil }
        }
    }

    /// Drops the bytes before `position`, so a file's buffer holds about one chunk. An in-memory payload is
    /// left whole: it is in memory anyway, and copies of the reader then share it.
    private mutating func compact() {
        guard handle != nil, position > Self.chunkSize else { return }
        buffer.removeFirst(position)
        bufferOffset += position
        position = 0
    }

    private mutating func readMore() throws -> Bool {
        guard !atEndOfInput, let handle else { return false }
        let chunk = try handle.read(upToCount: Self.chunkSize) ?? Data()
        if chunk.isEmpty {
            atEndOfInput = true
            try? handle.close()
            return false
        }
        buffer.append(contentsOf: chunk)
        return true
    }

    private func malformed(_ message: String) -> StructPostgresError {
        var error = StructPostgresError(.invalidValue, "malformed JSON: \(message) (byte \(bufferOffset + position + 1))")
        error.position = bufferOffset + position + 1
        return error
    }
}
