import Foundation

/// A value reached only while a lock is held.
///
/// The interpreter is compiled against Linux's Foundation too, so it cannot use the package's
/// lock. Synchronization's `Mutex` would do, but Thread Sanitizer does not see it (its lock
/// word changes inside the uninstrumented standard library) and reports the accesses it
/// orders as races; `NSLock`, a pthread mutex, it sees.
///
/// - Note: `@unchecked Sendable`: `value` is read and written only inside `withLock`, under
///   `lock`.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}
