import BookstoreModels
import Foundation
import Logging
import StructPostgresCommands
import Vapor

/// The book store on Vapor. `swift run BookstoreVapor` serves it (Vapor's `serve`, the default: `--hostname`,
/// `--port`); `DATABASE_URL`, or libpq's `PG*` variables, say where PostgreSQL is. SIGINT or SIGTERM stops it.
///
/// With one of StructPostgres's commands (`migrate`, `schema`, `db`, `observe`, `wait`) it runs the command line of
/// StructPostgres with the book store's models instead: `swift run BookstoreVapor schema verify`,
/// `swift run BookstoreVapor migrate draft add_isbn`, `swift run BookstoreVapor migrate up`.
@main
enum Entrypoint {
    static func main() async throws {
        if let command = CommandLine.arguments.dropFirst().first, structPGCommands.contains(command) {
            await StructPG.main(models: BookstoreSchema.models)
            return
        }
        var env = try Environment.detect()
        try LoggingSystem.bootstrap(from: &env)
        let app = try await Application.make(env)
        do {
            try await configure(app)
            try await app.execute()
        } catch {
            app.logger.report(error: error)
            try? await app.asyncShutdown()
            // Vapor's template rethrows, which the runtime reports as a crash; the error is logged: exit plainly.
            exit(1)
        }
        try await app.asyncShutdown()
    }

    /// The first words that go to StructPostgres's command line rather than to Vapor's (`serve`, `routes`).
    static let structPGCommands: Set = ["migrate", "schema", "db", "observe", "wait"]
}
