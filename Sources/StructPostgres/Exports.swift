/// The configuration and error types (``PostgresConfiguration``, ``StructPostgresError`` and theirs), declared in
/// `StructPostgresCore` below the driver, are this module's API: `import StructPostgres` is all a user writes.
@_exported import StructPostgresCore
