import ArgumentParser
import StructPostgres

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until the database accepts connections (for container start-ups).")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Seconds to wait before giving up.") var timeout = 30

    func run() async throws {
        try await reportingFailures {
            try await PostgresService.waitUntilAvailable(try connection.settings(), timeout: .seconds(timeout))
            print("The database accepts connections.")
        }
    }
}
