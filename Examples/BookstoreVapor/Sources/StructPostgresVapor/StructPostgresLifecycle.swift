import StructPostgres
import Synchronization
import Vapor

/// Runs the service while the app runs. Vapor shuts its lifecycle handlers down before its HTTP server, so this one
/// stops the server itself, in the order a graceful stop needs: live responses end, the server stops accepting and
/// finishes the requests in flight (they still have the pool), then the pool closes.
final class StructPostgresLifecycle: LifecycleHandler {
    let service: PostgresService
    let shutdown = ShutdownSignal()
    private let running = Mutex<Task<Void, Never>?>(nil)

    init(service: PostgresService) { self.service = service }

    /// Starts the service's `run()`; both of Vapor's boots (`asyncBoot()`, and `boot()` as `app.testing()` calls it)
    /// come here.
    func willBoot(_ application: Application) throws {
        let service = service
        running.withLock { task in
            guard task == nil else { return }
            task = Task {
                do {
                    try await service.run()
                } catch {
                    application.logger.error("the StructPostgres service stopped", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    func shutdownAsync(_ application: Application) async {
        shutdown.trigger()
        await application.server.shutdown()
        let task = running.withLock { $0.take() }
        task?.cancel()
        await task?.value
    }

    /// Without waiting, for `Application.shutdown()` (the synchronous one).
    func shutdown(_ application: Application) {
        shutdown.trigger()
        running.withLock { $0.take() }?.cancel()
    }
}
