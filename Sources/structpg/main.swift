import StructPostgresCommands

// The binary sees no app's models: `schema verify` and `migrate draft` say to run them from the app's executable.
// Synchronous top-level code, as a plain `main.swift` may be: `StructPG.main()` waits for the async commands (the
// CLI tests run every command through it).
StructPG.main()
