// Operations whose work is blocked in a wait: what they wait for, so that a stall report can
// follow the chain through them (an operation that waits for one behind it on its own serial
// queue holds the slot that one needs: a deadlock).

/// The waits made from inside running operations — blocking waits on a queue's worker, and
/// `await`s inside an `async` body — with what they wait for.
enum BlockedWaits {
    /// A running operation blocked in a wait, and what it waits for.
    struct Entry {
        /// `unowned(unsafe)`: the entry lives only while the waiting operation's `start()`
        /// is on the stack of the thread that made the wait.
        unowned(unsafe) let operation: Operation
        let targets: [Operation]
    }

    private struct Entries {
        var byID: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
    }

    private static let entries = Locked(Entries())

    /// Runs `wait` with the operation the current thread runs (if it is a queue's worker in
    /// an operation) registered as blocked, waiting for `targets`.
    static func during(targets: () -> [Operation], _ wait: () -> Void) {
        guard let operation = WorkerContext.current?.operation else { return wait() }
        let waitedFor = targets()
        raise(waitedFor, to: operation)
        let id = register(operation, targets: waitedFor)
        wait()
        unregister(id)
    }

    /// Runs `wait` with the operation whose `async` body the current task runs (if any)
    /// registered as waiting for `targets`: the body keeps its slot while it awaits.
    static func during<T>(awaiting targets: @autoclosure () -> [Operation], _ wait: () async -> T) async -> T {
        guard let context = OperationQueue._taskContext, let operation = context.operation,
            context.bodyTask != nil, withUnsafeCurrentTask(body: { $0?.hashValue }) == context.bodyTask
        else { return await wait() }
        let waitedFor = targets()
        raise(waitedFor, to: operation)
        let id = register(operation, targets: waitedFor)
        let result = await wait()
        unregister(id)
        return result
    }

    /// A wait that begins inside an escalated operation raises what it waits for: the
    /// escalation's walk only reached the waits already made.
    private static func raise(_ targets: [Operation], to operation: Operation) {
        guard let raised = operation._escalatedQuality else { return }
        for target in targets { target._escalate(to: raised) }
    }

    private static func register(_ operation: Operation, targets: [Operation]) -> UInt64 {
        entries.withLock { entries in
            entries.nextID += 1
            entries.byID[entries.nextID] = Entry(operation: operation, targets: targets)
            return entries.nextID
        }
    }

    private static func unregister(_ id: UInt64) {
        // Released after the lock: the targets may be the last references.
        let removed = entries.withLock { $0.byID.removeValue(forKey: id) }
        _ = removed
    }

    /// What `operation` waits for, if its work is blocked in a wait (or awaits, in its body).
    static func targets(of operation: Operation) -> [Operation]? {
        let found = entries.withLock { entries in
            entries.byID.values.filter { $0.operation === operation }.flatMap(\.targets)
        }
        return found.isEmpty ? nil : found
    }
}

extension Operation {
    /// Whether the operation's work is blocked in a wait the library sees (blocking, or an
    /// `await` in its body): for tests that must know such a wait has begun.
    package final var _isBlockedInWait: Bool { BlockedWaits.targets(of: self) != nil }
}
