import ArgumentParser
import Foundation
import StructPostgres

extension Migrate {
    /// `migrate draft NAME`: the next migration file, drafted from the app's models against the database.
    struct Draft: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write the migration the app's models need, drafted against the database, for review (from the app's own executable).",
            discussion: """
                The database must have every migration of the folder applied. What can be added safely (tables, \
                columns, foreign keys) is SQL; what must never be automatic (a type change, a dropped or renamed \
                property) is a '-- review:' line. A unique index built CONCURRENTLY goes to a second file, run \
                outside a transaction. Nothing is written when the models and the database agree.
                """)
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var options: MigrationOptions
        @Argument(help: "What the migration does, e.g. add_isbn_to_books.") var name: String
        @Flag(help: "Number the files after the highest version in the folder (0008_name.sql) instead.") var sequential = false

        func validate() throws {
            try New.validate(name: name)
        }

        func run() async throws {
            try await reportingFailures {
                let models = try StructPG.requireModels(for: "migrate draft")
                var draft: MigrationDraft?
                try FileManager.default.createDirectory(
                    at: URL(fileURLWithPath: options.migrationsDirectory), withIntermediateDirectories: true)
                try await withMigrator(connection, options) { migrator in
                    let pending = try await migrator.verify()
                    guard pending.isEmpty else {
                        throw StructPostgresError(
                            .migrationRefused,
                            "\(pending.count) migration\(pending.count == 1 ? " is" : "s are") not applied (\(pending.map(\.fileName).joined(separator: ", "))): the draft compares the models with the database, so run `\(StructPG.commandName) migrate up` first"
                        )
                    }
                    draft = try await migrator.service.draftMigration(for: models)
                }
                guard let draft, !draft.isEmpty else {
                    print("The models agree with the database's schema: nothing to draft.")
                    return
                }
                let files = draft.files
                guard !files.isEmpty else {
                    print("Nothing can be drafted as SQL, so no file was written. Each line needs a decision, in a migration of your own:")
                    for line in draft.reviews { print(line) }
                    throw ExitCode.failure
                }
                let names = files.count == 1 ? [name] : [name, "\(name)_concurrently"]
                for (file, url) in zip(files, try New.reserve(names, in: options.migrationsDirectory, sequential: sequential)) {
                    try file.write(to: url, atomically: true, encoding: .utf8)
                    print(url.path)
                }
                let reviews = draft.reviews
                if !reviews.isEmpty {
                    print(
                        "\(reviews.count) line\(reviews.count == 1 ? "" : "s") marked '-- review:' need a decision before the migration is applied:"
                    )
                    for line in reviews { print(line) }
                }
            }
        }
    }
}
