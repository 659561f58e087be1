/// Releases the operations a dying operation held, iteratively.
///
/// An operation holds its dependencies (and a typed operation its inputs and the closure
/// that reads them). Dropping
/// the last reference to the end of a long chain would otherwise release the chain
/// recursively, one stack frame per operation, and overflow the stack. The outermost
/// `deinit` on a thread drains a per-thread list; nested ones only append to it.
package enum ReleasePool {
    /// What nested releases handed to the outermost one on this thread. On its stack: a
    /// release that cascades no further (the common case) allocates nothing.
    private struct Pending {
        var arrays: [[Operation]] = []
        /// Anything else that may hold operations (a closure's captures).
        var others: [Any] = []
    }

    private static let current = ThreadLocalPointer()

    package static func release(_ operations: consuming [Operation]) {
        if let pointer = current.value {
            pointer.assumingMemoryBound(to: Pending.self).pointee.arrays.append(consume operations)
            return
        }
        var held: [Operation]? = consume operations
        var pending = Pending()
        withUnsafeMutablePointer(to: &pending) { pending in
            current.set(UnsafeMutableRawPointer(pending))
            // Dropped inside the pool: the deinits it causes hand their operations to it.
            _ = held.take()
            drain(pending)
        }
    }

    /// Releases a value that may hold operations (a closure), the same way.
    /// (Not folded with `release(_:)` through a closure: a closure would keep a copy of
    /// the value until after the drain, and drop it outside the pool, recursively.)
    static func release(other value: consuming Any) {
        if let pointer = current.value {
            pointer.assumingMemoryBound(to: Pending.self).pointee.others.append(consume value)
            return
        }
        var held: Any? = consume value
        var pending = Pending()
        withUnsafeMutablePointer(to: &pending) { pending in
            current.set(UnsafeMutableRawPointer(pending))
            _ = held.take()
            drain(pending)
        }
    }

    /// Releases what was handed over until nothing is left, then closes the pool.
    private static func drain(_ pending: UnsafeMutablePointer<Pending>) {
        while true {
            if let next = pending.pointee.arrays.popLast() {
                _ = consume next
            } else if let next = pending.pointee.others.popLast() {
                _ = consume next
            } else {
                break
            }
        }
        current.set(nil)
    }
}
