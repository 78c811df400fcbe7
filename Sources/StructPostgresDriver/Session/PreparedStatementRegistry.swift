import Logging
import PostgresNIO
import Synchronization
import StructPostgresCore

/// Names the statements the library sends, so that each connection parses and plans a statement once and
/// afterwards only binds and executes it (for a single-row upsert, that is most of the server's work).
///
/// PostgresNIO prepares a named statement on a connection the first time it is executed there and remembers
/// it for the connection's lifetime, including a failed preparation. So a name is retired (and the statement
/// prepared again under a new one) after an error that may have come from the preparation or that leaves
/// the prepared plan unusable: syntax and catalog errors, transaction state, a changed result type.
/// At most ``capacity`` statement shapes are named; beyond that, statements are sent unnamed.
package final class PreparedStatementRegistry: Sendable {
    static let capacity = 512

    /// A statement's text and parameter types, hashed once: a plan that sends the same statement on every call
    /// keeps its key, so that looking up its name does not hash the whole text again.
    package struct Key: Hashable, Sendable {
        let sql: String
        package let types: [PostgresDataType]
        private let hash: Int

        package init(sql: String, types: [PostgresDataType]) {
            (self.sql, self.types) = (sql, types)
            var hasher = Hasher()
            hasher.combine(sql)
            hasher.combine(types)
            hash = hasher.finalize()
        }

        package func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        package static func == (lhs: Key, rhs: Key) -> Bool { lhs.hash == rhs.hash && lhs.sql == rhs.sql && lhs.types == rhs.types }
    }

    private struct State {
        var names: [Key: String] = [:]
        var issued = 0
    }

    private let state = Guarded(State())

    /// The name for `key`, or `nil` when the registry is full.
    func name(for key: Key) -> String? {
        state.withLock { state in
            if let name = state.names[key] { return name }
            guard state.names.count < Self.capacity else { return nil }
            state.issued += 1
            let name = "structpg_\(state.issued)"
            state.names[key] = name
            return name
        }
    }

    /// After a failed execution: retires the name when the error may have come from preparing the statement.
    func failed(_ key: Key, name: String, sqlState: String?) {
        let retire = sqlState.map { state in ["42", "25", "0A", "26", "3F", "3D"].contains(where: state.hasPrefix) } ?? true
        guard retire else { return }
        state.withLock { state in
            if state.names[key] == name { state.names[key] = nil }
        }
    }

    func forgetAll() { state.withLock { $0.names.removeAll() } }
}

/// A statement executed under a name chosen at run time: PostgresNIO reads a prepared statement's name,
/// text and parameter types from static members, so they are handed over through a task-local value
/// for the duration of the `execute` call.
struct NamedStatement: PostgresPreparedStatement {
    struct Current: Sendable {
        let name: String
        let sql: String
        let types: [PostgresDataType]
    }

    @TaskLocal static var current: Current?

    static var name: String { current?.name ?? "" }
    static var sql: String { current?.sql ?? "" }
    static var bindingDataTypes: [PostgresDataType] { current?.types ?? [] }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    /// Executes `statement` on `connection` under `name`, preparing it there first when needed.
    static func execute(
        _ statement: Statement, named name: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> RowSequence {
        try await $current.withValue(Current(name: name, sql: statement.sql, types: statement.types)) {
            try await connection.execute(NamedStatement(bindings: statement.bindings), logger: logger)
        }
    }
}
