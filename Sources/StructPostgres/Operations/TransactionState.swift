import Synchronization
import StructPostgresCore
import StructPostgresDriver

/// One transaction, or a savepoint in it, on its session: usable while its closure runs, suspended while a
/// nested savepoint's closure runs, finished afterwards.
final class TransactionState: Sendable {
    private enum Phase { case active, suspended, finished }

    let session: DatabaseSession
    let depth: Int
    private let phase = Guarded<Phase>(.active)
    /// Counts the cursors declared in the whole transaction, nested savepoints included, to name them apart.
    private let cursors: Cursors

    private final class Cursors: Sendable {
        let count = Atomic(0)
    }

    private init(session: DatabaseSession, depth: Int, cursors: Cursors) {
        self.session = session
        self.depth = depth
        self.cursors = cursors
    }

    /// Runs `body` in a transaction on `session`: `BEGIN` with `options`, `COMMIT` when it returns, `ROLLBACK`
    /// when it (or the commit) throws.
    static func run<T>(
        on session: DatabaseSession, options: TransactionOptions, _ body: (TransactionState) async throws -> T
    ) async throws -> T {
        try await session.execute(statement: options.beginSQL)
        let transaction = TransactionState(session: session, depth: 0, cursors: Cursors())
        defer { transaction.finish() }
        let result: T
        do {
            result = try await body(transaction)
            transaction.finish()
        } catch {
            transaction.finish()
            await session.rollBack()
            throw error
        }
        do {
            try await session.commit()
        } catch {
            await session.rollBack()
            throw error
        }
        return result
    }

    /// Runs `body` inside a savepoint: if it throws, only its work is rolled back and the error is rethrown;
    /// this transaction goes on. While it runs, only the nested state may be used.
    func savepoint<T>(_ body: (TransactionState) async throws -> T) async throws -> T {
        try suspend()
        let name = "structpg_sp_\(depth + 1)"
        do {
            try await session.execute(statement: "SAVEPOINT \(name)")
        } catch {
            phase.withLock { $0 = .active }
            throw error
        }
        let inner = TransactionState(session: session, depth: depth + 1, cursors: cursors)
        defer {
            inner.finish()
            phase.withLock { if $0 == .suspended { $0 = .active } }
        }
        do {
            let result = try await body(inner)
            inner.finish()
            try await session.execute(statement: "RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            inner.finish()
            try? await session.execute(statement: "ROLLBACK TO SAVEPOINT \(name)", evenIfCancelled: true)
            throw error
        }
    }

    /// A cursor name no other cursor of the transaction has.
    func nextCursorName() -> String {
        "structpg_cursor_\(cursors.count.add(1, ordering: .relaxed).newValue)"
    }

    private func finish() { phase.withLock { $0 = .finished } }

    /// Checks that this transaction is usable and marks it as having a nested one open, atomically,
    /// so two concurrent nested transactions cannot both take the same savepoint name.
    private func suspend() throws {
        let previous = phase.withLock { phase -> Phase in
            defer { if phase == .active { phase = .suspended } }
            return phase
        }
        guard previous == .active else { try ensureActive(); return }
    }

    func ensureActive() throws {
        switch phase.withLock({ $0 }) {
        case .active: return
        case .suspended:
            throw StructPostgresError(
                .transactionMisuse, "this transaction has a nested transaction open; use the value passed to the nested closure")
        case .finished: throw Self.ended
        }
    }

    /// Checks that the transaction has not ended: its connection may be another caller's by then.
    func ensureNotFinished() throws {
        if phase.withLock({ $0 }) == .finished { throw Self.ended }
    }

    private static var ended: StructPostgresError {
        StructPostgresError(.transactionMisuse, "the transaction has ended; a transaction cannot be used outside its closure")
    }
}
