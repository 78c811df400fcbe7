import ArgumentParser

/// `structpg`: the migration runner of StructPostgres.
@main
struct StructPG: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "structpg",
        abstract: "Apply and inspect the SQL migrations of a StructPostgres app.",
        discussion: """
            Migrations are files named NNNN_name.sql in --migrations-dir, each with a '-- migrate:up' part \
            and an optional '-- migrate:down' part. The connection comes from --database-url, DATABASE_URL \
            or libpq's PG* variables. Exit code 0 means success; anything else prints one line on stderr.
            """,
        subcommands: [Migrate.self, Wait.self])
}
