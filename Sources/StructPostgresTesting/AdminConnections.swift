import Logging
import StructPostgres

/// The connections that create and drop the tests' databases: each statement runs on a service of its own, started
/// and stopped around it (its `run()` inside the call's scope), at most ``limit`` at once, so that tests starting
/// together queue here rather than each open a connection.
actor AdminConnections {
    static let shared = AdminConnections()
    /// Connections open at once for creating and dropping databases (the budget keeps them free).
    static let limit = 16

    private var inUse = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` on a one-connection service on `settings`, once one of the ``limit`` slots is free.
    nonisolated func run<T: Sendable>(on settings: ConnectionSettings, _ body: @Sendable (PostgresService) async throws -> T) async throws
        -> T
    {
        await take()
        do {
            var configuration = PostgresService.Configuration(connection: settings, pool: PoolOptions(maxConnections: 1))
            configuration.logger = Logger(label: "StructPostgresTesting.admin", factory: { _ in SwiftLogNoOpLogHandler() })
            let result = try await PostgresService.withService(configuration: configuration, body)
            await giveBack()
            return result
        } catch {
            await giveBack()
            throw error
        }
    }

    private func take() async {
        if inUse < Self.limit {
            inUse += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the slot to the first waiter, if any.
    private func giveBack() {
        if waiting.isEmpty { inUse -= 1 } else { waiting.removeFirst().resume() }
    }
}
