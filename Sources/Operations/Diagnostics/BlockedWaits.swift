// Operations whose work is blocked in a wait: what they wait for, so that a stall report can
// follow the chain through them (an operation that waits for one behind it on its own serial
// queue holds the slot that one needs: a deadlock).

/// The blocking waits made from inside running operations, by operation.
enum BlockedWaits {
    /// A running operation blocked in a wait, and what it waits for.
    struct Entry {
        /// `unowned(unsafe)`: the entry lives only while the waiting operation's `start()`
        /// is on the stack of the thread that made the wait.
        unowned(unsafe) let operation: Operation
        let targets: [Operation]
    }

    private static let entries = Locked<[ObjectIdentifier: Entry]>([:])

    /// Runs `wait` with the operation the current thread runs (if it is a queue's worker in
    /// an operation) registered as blocked, waiting for `targets`.
    static func during(targets: () -> [Operation], _ wait: () -> Void) {
        guard let operation = WorkerContext.current?.operation else { return wait() }
        let key = ObjectIdentifier(operation)
        entries.withLock { $0[key] = Entry(operation: operation, targets: targets()) }
        wait()
        // Released after the lock: the targets may be the last references.
        let removed = entries.withLock { $0.removeValue(forKey: key) }
        _ = removed
    }

    /// What `operation` waits for, if its work is blocked in a wait.
    static func targets(of operation: Operation) -> [Operation]? {
        entries.withLock { $0[ObjectIdentifier(operation)]?.targets }
    }

    /// The operations of `queue` blocked in a wait (they hold its slots while they wait).
    static func blocked(in queue: OperationQueue) -> [Operation] {
        let all = entries.withLock { Array($0.values) }
        return all.map(\.operation).filter { $0._queue === queue }
    }
}
