import Operations

/// An operation whose `main()` calls a closure: the tutorials' synchronous subclass.
/// - Note: `@unchecked Sendable`: its one field is a `let` of a `Sendable` type.
public final class ClosureOperation: Operation, @unchecked Sendable {
    private let body: @Sendable (ClosureOperation) -> Void

    public init(name: String? = nil, _ body: @escaping @Sendable (ClosureOperation) -> Void = { _ in }) {
        self.body = body
        super.init()
        self.name = name
    }

    public override func main() { body(self) }
}

/// An operation whose body runs until it is cancelled, as one whose `cancel()` closes the
/// socket its body reads: `super.cancel()`, then the cleanup that ends the body, then
/// `afterCleanup` (once), where a test holds the cancelling call while the freed slot is
/// given to the next operation.
/// - Note: `@unchecked Sendable`: its own fields are `let`s of `Sendable` types.
public final class CancelEndsBodyOperation: Operation, @unchecked Sendable {
    /// Opened when the body begins.
    public let bodyStarted = BlockingSignal()
    private let closed = BlockingSignal()
    private let cleanedUp = Shared(false)
    private let afterCleanup: @Sendable () -> Void

    public init(afterCleanup: @escaping @Sendable () -> Void) {
        self.afterCleanup = afterCleanup
        super.init()
    }

    public override func main() {
        bodyStarted.open()
        _ = closed.wait()
    }

    public override func cancel() {
        super.cancel()
        closed.open()
        let first = cleanedUp.update { done in
            defer { done = true }
            return !done
        }
        if first { afterCleanup() }
    }
}

/// A `BlockOperation` whose work runs `onStart`, then holds the operation (and its queue's
/// slot) until `release` opens, for ten minutes at most.
public func blockOperationHeld(
    until release: BlockingSignal, onStart: @escaping @Sendable () -> Void = {}
) -> BlockOperation {
    BlockOperation {
        onStart()
        _ = release.wait(timeout: 600)
    }
}

/// A `BlockOperation` whose work appends `name` to `ran`, and a signal its completion block
/// opens: the operation has settled, having run its work or finished without it.
public func operationLoggingItsWork(
    _ name: String, to ran: Shared<[String]>
) -> (BlockOperation, settled: BlockingSignal) {
    let settled = BlockingSignal()
    let operation = BlockOperation { ran.append(name) }
    operation.completionBlock = { settled.open() }
    return (operation, settled)
}

extension Operation {
    /// Sets the name and returns the operation (for tests that build lists).
    public func named(_ name: String) -> Self {
        self.name = name
        return self
    }
}

/// Adds `operation` to a new queue and waits until the queue has run it.
public func runOnANewQueue(_ operation: Operation) {
    let queue = OperationQueue()
    queue.addOperation(operation)
    queue.waitUntilAllOperationsAreFinished()
}

/// A new queue, suspended, holding `operations`: they wait in it until it resumes.
public func suspendedQueue(holding operations: Operation...) -> OperationQueue {
    let queue = OperationQueue()
    queue.isSuspended = true
    for operation in operations { queue.addOperation(operation) }
    return queue
}

/// A new serial queue (one operation at a time), suspended: what is added to it waits, and
/// starts in order once it is resumed.
public func suspendedSerialQueue() -> OperationQueue {
    let queue = suspendedQueue()
    queue.maxConcurrentOperationCount = 1
    return queue
}
