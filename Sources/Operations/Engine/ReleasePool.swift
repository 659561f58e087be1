/// Releases the operations a dying operation held, iteratively.
///
/// An operation holds its dependencies (and a typed operation its inputs and the closure
/// that reads them). Dropping
/// the last reference to the end of a long chain would otherwise release the chain
/// recursively, one stack frame per operation, and overflow the stack. The outermost
/// `deinit` on a thread drains a per-thread list; nested ones only append to it.
package enum ReleasePool {
    /// The list being drained on this thread.
    /// - Note: `@unchecked Sendable`: only ever touched by the thread whose thread-local
    ///   slot points at it.
    private final class Pending: @unchecked Sendable {
        var arrays: [[Operation]] = []
        /// Anything else that may hold operations (a closure's captures).
        var others: [Any] = []
    }

    private static let current = ThreadLocalPointer()

    package static func release(_ operations: consuming [Operation]) {
        if let pointer = current.value {
            let pending = Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue()
            pending.arrays.append(consume operations)
            return
        }
        let pending = Pending()
        pending.arrays.append(consume operations)
        drain(pending)
    }

    /// Releases a value that may hold operations (a closure), the same way.
    /// (Not folded with `release(_:)` through a closure: a closure would keep a copy of
    /// the value until after the drain, and drop it outside the pool, recursively.)
    static func release(other value: consuming Any) {
        if let pointer = current.value {
            let pending = Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue()
            pending.others.append(consume value)
            return
        }
        let pending = Pending()
        pending.others.append(consume value)
        drain(pending)
    }

    private static func drain(_ pending: Pending) {
        current.set(Unmanaged.passUnretained(pending).toOpaque())
        while true {
            if let next = pending.arrays.popLast() {
                _ = consume next
            } else if let next = pending.others.popLast() {
                _ = consume next
            } else {
                break
            }
        }
        current.set(nil)
        withExtendedLifetime(pending) {}
    }
}
