import StructPostgresCore
import StructPostgresDriver

/// The versions rows of entities with a version hold after a call, by entity type and unique key: what
/// ``UpsertResult/version(of:)`` answers from. Rows are kept as the batches were sent (key columns and versions side
/// by side, nothing copied); a lookup among many rows builds an index once.
struct WrittenVersions: Sendable, Equatable {
    /// One statement's rows.
    struct Segment: Sendable, Equatable {
        let entity: ObjectIdentifier
        let keyColumns: [String]
        /// The unique key's values, column by column.
        let keys: [[ColumnValue]]
        /// Each row's outcome: its version now, or the conflict that left it as stored.
        let outcomes: [Outcome]
        private let index = KeyIndex()

        init(entity: ObjectIdentifier, keyColumns: [String], keys: [[ColumnValue]], outcomes: [Outcome]) {
            (self.entity, self.keyColumns, self.keys, self.outcomes) = (entity, keyColumns, keys, outcomes)
        }

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.entity == rhs.entity && lhs.keyColumns == rhs.keyColumns && lhs.keys == rhs.keys && lhs.outcomes == rhs.outcomes
        }

        /// The row whose key is `key`.
        func row(of key: [ColumnValue]) -> Int? {
            guard outcomes.count > 16 else { return outcomes.indices.first { row in keys.indices.allSatisfy { keys[$0][row] == key[$0] } } }
            return index.rows(keys, count: outcomes.count)[key]
        }
    }

    enum Outcome: Sendable, Equatable {
        case version(Int)
        case conflict(VersionConflict)
        /// Left as stored by ``UpsertOptions/insertIfAbsent``: its version was not read.
        case unknown
    }

    /// The rows of each key, built at the first lookup among many rows.
    private final class KeyIndex: Sendable {
        private let built = Guarded<[[ColumnValue]: Int]?>(nil)

        func rows(_ keys: [[ColumnValue]], count: Int) -> [[ColumnValue]: Int] {
            if let known = built.withLock({ $0 }) { return known }
            var rows: [[ColumnValue]: Int] = [:]
            rows.reserveCapacity(count)
            for row in 0..<count { rows[keys.map { $0[row] }] = row }
            built.withLock { $0 = rows }
            return rows
        }
    }

    private(set) var segments: [Segment] = []

    init(_ segments: [Segment] = []) { self.segments = segments }

    static func + (lhs: Self, rhs: Self) -> Self { Self(lhs.segments + rhs.segments) }

    /// What became of `entity`'s row; `nil` when no statement of the call wrote an entity of its type with its key.
    func outcome<E: EntityProtocol>(of entity: E) throws -> Outcome? {
        let segments = segments.filter { $0.entity == ObjectIdentifier(E.self) }
        guard let first = segments.first else { return nil }
        let row = try RowEncoder(naming: E.columnNaming).encode(entity)
        let key = first.keyColumns.map { column in row.columns.firstIndex(of: column).map { row.values[$0] } ?? .null }
        // The last statement that wrote the key tells (a later chunk or round wrote after an earlier one).
        for segment in segments.reversed() {
            if let found = segment.row(of: key) { return segment.outcomes[found] }
        }
        return nil
    }
}
