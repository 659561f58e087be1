/// The completion blocks running on the current thread, innermost first: a wait made from
/// inside a completion block must not wait for that block (it would wait for itself). The
/// waking of an operation's waiters runs as a scope of its own, with no queue: a wait for
/// that operation made from a hook or an observer on this thread returns at once.
///
/// `waitUntilFinished()` and queue waits return after the completion block has run; from
/// inside the block, `waitUntilFinished()` of its own operation returns at once, and
/// `waitUntilAllOperationsAreFinished()` of its queue waits for every other operation.
struct CompletionBlockScope {
    /// Unowned: the entry lives on the stack of `run`, during which the finishing code
    /// holds both the operation and its queue.
    unowned(unsafe) let operation: Operation
    unowned(unsafe) let queue: OperationQueue?
    let outer: UnsafeMutableRawPointer?

    private static let innermost = ThreadLocalPointer()

    /// Runs `completionBlock` of `operation` (a member of `queue`) as the innermost scope.
    static func run(_ completionBlock: () -> Void, of operation: Operation, in queue: OperationQueue?) {
        var entry = CompletionBlockScope(operation: operation, queue: queue, outer: innermost.value)
        withUnsafeMutablePointer(to: &entry) { pointer in
            innermost.set(UnsafeMutableRawPointer(pointer))
            completionBlock()
            innermost.set(pointer.pointee.outer)
        }
    }

    /// Calls `body` with each scope on this thread, innermost first.
    private static func forEach(_ body: (CompletionBlockScope) -> Void) {
        var next = innermost.value
        while let pointer = next {
            let entry = pointer.assumingMemoryBound(to: CompletionBlockScope.self).pointee
            body(entry)
            next = entry.outer
        }
    }

    /// Whether this thread runs `operation`'s completion block.
    static func isRunning(for operation: Operation) -> Bool {
        guard innermost.value != nil else { return false }
        var found = false
        forEach { if $0.operation === operation { found = true } }
        return found
    }

    /// How many completion blocks of `queue`'s operations this thread runs: operations that
    /// stay in the queue until their blocks return.
    static func count(in queue: OperationQueue) -> Int {
        guard innermost.value != nil else { return 0 }
        var count = 0
        forEach { if $0.queue === queue { count += 1 } }
        return count
    }
}
