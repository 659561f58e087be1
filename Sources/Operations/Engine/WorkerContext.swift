/// What a queue worker knows about the operation it is running, reachable from its thread.
///
/// When an operation finishes on the worker that runs it (the common case: `main()`
/// returned), the worker records the finish and asks for the next operation in one
/// acquisition of the queue's lock instead of two.
///
/// - Note: `@unchecked Sendable`: only the worker's thread touches it (and the threads of a
///   `BlockOperation`'s blocks read `queue`, which never changes).
final class WorkerContext: @unchecked Sendable {
    unowned let queue: OperationQueue
    /// The operation whose `start()` the worker is in (the worker holds it meanwhile).
    unowned(unsafe) var operation: Operation?
    /// `operation` finished on this thread and left the queue's bookkeeping to the worker.
    var finishedHere = false

    init(queue: OperationQueue) {
        self.queue = queue
    }

    /// The context of the worker running on this thread, if any.
    static var current: WorkerContext? {
        OperationQueue._current.value.map { Unmanaged<WorkerContext>.fromOpaque($0).takeUnretainedValue() }
    }
}
