import Testing

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a suite or test whose calls could hang (coalesced batches, retries under contention), when it
    /// runs in scripts/test.sh's parallel passes: there a test's wall time is mostly the wait for a processor shared
    /// with every other suite (75 s here for a test that takes 2 s alone, 140 s on a slower CI machine, and machines
    /// of the kind vary up to threefold), so the limit catches a hang, never a busy machine. It stays under the
    /// pass's own 10-minute stop, so that a hang fails the test that hung, by name.
    static var hangLimit: Self { .timeLimit(.minutes(8)) }
}
