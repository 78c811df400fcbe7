import Crypto
import Foundation
import StructPostgresCore
import StructPostgresDriver

/// Seals page cursors with one service's key and opens them again: ChaCha20-Poly1305, so that a cursor's values are
/// neither readable nor alterable by whoever holds it. The key is derived from
/// ``PostgresConfiguration/pageCursorSecret`` (HKDF-SHA256), or made at random when the service starts.
struct PageCursorSeal: Sendable {
    private let key: SymmetricKey

    init(secret: String?) {
        if let secret {
            key = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)), info: Data("StructPostgres page cursor 1".utf8),
                outputByteCount: 32)
        } else {
            key = SymmetricKey(size: .bits256)
        }
    }

    func seal(_ position: PagePosition) throws -> PageCursor {
        PageCursor(sealed: Array(try ChaChaPoly.seal(position.encoded(), using: key).combined))
    }

    /// The position `cursor` holds.
    /// - Throws: `invalidValue` when the cursor was not sealed with this key (another service's, a key from before a
    ///   restart) or was altered.
    func open(_ cursor: PageCursor, entity: String, table: String) throws -> PagePosition {
        guard let bytes = cursor.bytes, let box = try? ChaChaPoly.SealedBox(combined: bytes),
            let opened = try? ChaChaPoly.open(box, using: key), let position = PagePosition(decoding: Array(opened))
        else {
            throw StructPostgresError(
                .invalidValue,
                "the page cursor was not issued by this service, or was altered: cursors are sealed with the service's key, made anew at each start unless Configuration.pageCursorSecret is set; start again from the first page",
                entity: entity, table: table)
        }
        return position
    }
}

/// Where a page ended: digests of the fetch's order and filter, and the cells of the order's columns on its last
/// row, as the server sent them (type, format and bytes), to be bound again as they were.
struct PagePosition: Equatable, Sendable {
    struct Cell: Equatable, Sendable {
        var dataType: UInt32
        var binary: Bool
        /// `nil` for NULL.
        var bytes: [UInt8]?
    }

    var order: UInt64
    var filter: UInt64
    var cells: [Cell]

    static let version: UInt8 = 1

    init(order: UInt64, filter: UInt64, cells: [Cell]) {
        self.order = order
        self.filter = filter
        self.cells = cells
    }

    /// Version, the two digests, the number of cells, then each cell: NULL, binary or text, its type, its length and bytes.
    func encoded() -> [UInt8] {
        var out: [UInt8] = [Self.version]
        func append(_ value: UInt64, bytes count: Int) {
            for index in (0..<count).reversed() { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
        }
        append(order, bytes: 8)
        append(filter, bytes: 8)
        append(UInt64(cells.count), bytes: 2)
        for cell in cells {
            guard let bytes = cell.bytes else {
                out.append(0)
                continue
            }
            out.append(cell.binary ? 1 : 2)
            append(UInt64(cell.dataType), bytes: 4)
            append(UInt64(bytes.count), bytes: 4)
            out += bytes
        }
        return out
    }

    init?(decoding bytes: [UInt8]) {
        var index = 0
        func read(_ count: Int) -> UInt64? {
            guard index + count <= bytes.count else { return nil }
            defer { index += count }
            return bytes[index..<(index + count)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        guard read(1) == UInt64(Self.version), let order = read(8), let filter = read(8), let count = read(2) else { return nil }
        var cells: [Cell] = []
        for _ in 0..<count {
            guard let kind = read(1) else { return nil }
            if kind == 0 {
                cells.append(Cell(dataType: 0, binary: true, bytes: nil))
                continue
            }
            guard kind <= 2, let dataType = read(4), let length = read(4), index + Int(length) <= bytes.count else { return nil }
            cells.append(Cell(dataType: UInt32(dataType), binary: kind == 1, bytes: Array(bytes[index..<(index + Int(length))])))
            index += Int(length)
        }
        guard index == bytes.count else { return nil }
        self.init(order: order, filter: filter, cells: cells)
    }
}
