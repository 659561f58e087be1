#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value reached only while a pthread mutex is held.
///
/// The interpreter is compiled against Linux's Foundation too, so it cannot use the package's
/// lock. Synchronization's `Mutex` would do, but Thread Sanitizer does not see it (its lock
/// word changes inside the uninstrumented standard library) and reports the accesses it
/// orders as races; a pthread mutex it sees.
///
/// - Note: `@unchecked Sendable`: `value` is read and written only inside `withLock`, under
///   `mutex`.
final class Guarded<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
