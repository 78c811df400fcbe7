import Synchronization
import StructPostgresCore

#if STRUCTPG_THREAD_SANITIZER
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#endif

/// A value only reached under a lock: the standard library's `Mutex`.
///
/// In the thread sanitizer's build (`-Xswiftc -DSTRUCTPG_THREAD_SANITIZER`, `scripts/test.sh`) a pthread mutex is
/// also taken inside it. ThreadSanitizer does not see `Mutex` lock and unlock (their code in the standard library is
/// not instrumented), so it would report every access a `Mutex` guards as a race; a pthread mutex it understands,
/// so that what it reports is an access made without the lock.
///
/// `withLock` is inlinable, and the type `@usableFromInline` (see ``ResultCells``): the module above takes these
/// locks on every call, where an unspecialized generic call looked up its types' metadata each time.
@usableFromInline package struct Guarded<Value>: ~Copyable, @unchecked Sendable {
    @usableFromInline let mutex: Mutex<Value>
    #if STRUCTPG_THREAD_SANITIZER
    @usableFromInline let visible: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    package init(_ value: consuming sending Value) {
        mutex = Mutex(value)
        #if STRUCTPG_THREAD_SANITIZER
        visible = .allocate(capacity: 1)
        pthread_mutex_init(visible, nil)
        #endif
    }

    #if STRUCTPG_THREAD_SANITIZER
    deinit {
        pthread_mutex_destroy(visible)
        visible.deallocate()
    }
    #endif

    /// Runs `body` with the value, under the lock.
    @inlinable
    package borrowing func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result
    {
        #if STRUCTPG_THREAD_SANITIZER
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            pthread_mutex_lock(visible)
            defer { pthread_mutex_unlock(visible) }
            return try body(&value)
        }
        #else
        try mutex.withLock(body)
        #endif
    }
}
