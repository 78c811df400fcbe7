import StructPostgresCommands

// The binary sees no app's models: `schema verify` and `migrate draft` say to run them from the app's executable.
await StructPG.main(models: [])
