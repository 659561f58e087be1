import Synchronization

/// What a queue worker knows about the operation it is running, reachable from its thread.
///
/// When an operation finishes on the worker that runs it (the common case: `main()`
/// returned), the worker records the finish and asks for the next operation in one
/// acquisition of the queue's lock instead of two.
///
/// - Note: `@unchecked Sendable`: only the worker's thread touches it (the threads of a
///   `BlockOperation`'s blocks read `queue`, which never changes; the watchdog reads
///   `inOperation`, an atomic, under the queue's lock while the worker is registered).
final class WorkerContext: @unchecked Sendable {
    /// `unowned(unsafe)`: the worker's closure holds the queue for the context's whole
    /// life (the context lives only inside `_runWorker`).
    unowned(unsafe) let queue: OperationQueue
    /// The queue's worker slot this worker holds.
    let slot: Int
    /// Whether the worker runs on Dispatch's shared pool, not on its slot's lane (see
    /// `QueueCore.WorkerStart`).
    let onSharedPool: Bool
    /// The operation whose `start()` the worker is in (the worker holds it meanwhile).
    /// (This and the other `var`s are written only by the worker's own thread, and read by
    /// other threads only while it waits for them, a `BlockOperation`'s blocks: no run-time
    /// exclusivity checks.)
    @exclusivity(unchecked) unowned(unsafe) var operation: Operation?
    /// `operation` finished on this thread and left the queue's bookkeeping to the worker.
    @exclusivity(unchecked) var finishedHere = false
    /// What the finish of `operation` left to run once its `start()` has returned (its
    /// completion block and what follows it, see `PendingCompletion`).
    @exclusivity(unchecked) private var afterStart: (() -> Void)?
    /// Whether the worker is inside an operation's `start()` (read by the watchdog where it
    /// cannot read what the thread waits for: then such a worker may be blocked).
    private let inOperation = Atomic(false)
    /// The thread's quality of service before the worker changed it, to restore.
    @exclusivity(unchecked) private var originalQuality: QualityOfService?
    /// What the worker last gave the thread (the common case: unchanged, nothing to do).
    @exclusivity(unchecked) private var appliedQuality: QualityOfService?

    var isInOperation: Bool { inOperation.load(ordering: .relaxed) }

    init(queue: OperationQueue, slot: Int, onSharedPool: Bool) {
        self.queue = queue
        self.slot = slot
        self.onSharedPool = onSharedPool
    }

    /// Starts `operation` on this thread, at its quality of service: its own (`own`, read
    /// when it was claimed; nil when never set), but never below its queue's.
    func runOperation(_ operation: Operation, own: QualityOfService?, queueQuality: QualityOfService) {
        let quality = QualityOfService.runningAt(own: own, queue: queueQuality)
        if quality != appliedQuality {
            let thread = Thread.current
            if originalQuality == nil { originalQuality = thread.qualityOfService }
            thread.qualityOfService = quality
            appliedQuality = quality
        }
        self.operation = operation
        inOperation.store(true, ordering: .relaxed)
        operation.start()
        self.operation = nil
        // Still inside the operation for the watchdog: a completion block may block.
        if let afterStart = afterStart.take() { afterStart() }
        inOperation.store(false, ordering: .relaxed)
    }

    /// Gives the thread back at the quality of service it had.
    func restoreThreadQualityOfService() {
        if let originalQuality { Thread.current.qualityOfService = originalQuality }
    }

    /// When this thread's worker is running `operation` of `queue`, records that it finished
    /// here (the worker does the queue's bookkeeping with its next lock) and returns true.
    /// Without retaining the context: this is on the path of every operation.
    static func finishedHere(_ operation: Operation, queue: OperationQueue) -> Bool {
        guard let pointer = OperationQueue._current.value else { return false }
        // Unretained: the context lives until its worker's loop returns, and that loop is
        // below us on this thread's stack.
        return Unmanaged<WorkerContext>.fromOpaque(pointer)._withUnsafeGuaranteedRef { context in
            guard context.operation === operation, context.queue === queue else { return false }
            context.finishedHere = true
            return true
        }
    }

    /// When this thread's worker is inside `start()` of `operation`, keeps `work` to run once
    /// that `start()` has returned, and returns true.
    static func runAfterStart(of operation: Operation, _ work: @escaping () -> Void) -> Bool {
        guard let pointer = OperationQueue._current.value else { return false }
        // Unretained, as in `finishedHere`: the worker's loop is below us on this stack.
        return Unmanaged<WorkerContext>.fromOpaque(pointer)._withUnsafeGuaranteedRef { context in
            guard context.operation === operation, context.afterStart == nil else { return false }
            context.afterStart = work
            return true
        }
    }

    /// Whether this thread's worker is inside `start()` of `operation` and keeps the rest of
    /// its finish for after that `start()`: a wait for it there would wait for itself.
    static func keepsFinishAfterStart(of operation: Operation) -> Bool {
        guard let pointer = OperationQueue._current.value else { return false }
        return Unmanaged<WorkerContext>.fromOpaque(pointer)._withUnsafeGuaranteedRef { context in
            context.operation === operation && context.afterStart != nil
        }
    }

    /// The context of the worker running on this thread, if any.
    static var current: WorkerContext? {
        OperationQueue._current.value.map { Unmanaged<WorkerContext>.fromOpaque($0).takeUnretainedValue() }
    }
}

extension OperationQueue {
    /// Whether this thread runs a queue's worker on Dispatch's shared pool (true) or on a
    /// lane (false); nil outside workers. For tests.
    package static var _workerIsOnSharedPool: Bool? { WorkerContext.current?.onSharedPool }
}

extension QualityOfService {
    /// What an operation runs at: its own (`own`, nil when never set), never below its
    /// queue's; its queue's when it has none; in no queue (`queue` nil), its own or `.default`.
    static func runningAt(own: QualityOfService?, queue: QualityOfService?) -> QualityOfService {
        guard let queue else { return own ?? .default }
        guard let own else { return queue }
        return own.rank < queue.rank ? queue : own
    }

    /// Orders the classes from background (lowest) to user-interactive; `.default` sits
    /// between utility and user-initiated.
    var rank: Int {
        switch self {
        case .background: 0
        case .utility: 1
        case .userInitiated: 3
        case .userInteractive: 4
        default: 2
        }
    }
}
