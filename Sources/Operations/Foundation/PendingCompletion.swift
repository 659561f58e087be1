import Dispatch

/// The rest of a finish whose operation has a completion block: the block, then the
/// operation's leaving its queue, its observers and its waiters.
///
/// It runs after the `start()` that finished the operation has returned, never inside it
/// (as on Darwin and Linux's Foundation): a queue's worker runs it next, once that `start()`
/// returned; anywhere else (a start by hand, an asynchronous body's task, a subclass
/// announcing its finish) it runs on another thread, at the operation's quality of service.
/// So a sequence of operations, each started by hand from the previous one's completion
/// block, takes a bounded stack however long it is. Until it has run, the operation counts
/// as finishing: waits for it, and for its queue, go on waiting.
///
/// - Note: `@unchecked Sendable`: touched by one thread at a time — made by the finishing
///   thread, then run once by the thread it is handed to (through Dispatch or the worker's
///   own stack, both of which order the hand-over).
final class PendingCompletion: @unchecked Sendable {
    private let operation: Operation
    private var completionBlock: (@Sendable () -> Void)?
    private let queue: OperationQueue?
    private var queueWaiters: [QueueWaiter]
    private let announcement: TakenAnnouncement?
    private let announcing: Bool
    private let observed: Bool

    init(
        operation: Operation, completionBlock: @escaping @Sendable () -> Void, queue: OperationQueue?,
        queueWaiters: [QueueWaiter], announcement: TakenAnnouncement?, announcing: Bool, observed: Bool
    ) {
        self.operation = operation
        self.completionBlock = completionBlock
        self.queue = queue
        self.queueWaiters = queueWaiters
        self.announcement = announcement
        self.announcing = announcing
        self.observed = observed
    }

    /// Hands the rest of the finish to the worker whose `start()` of the operation is on this
    /// thread's stack, or else to another thread.
    func runAfterStart() {
        if WorkerContext.runAfterStart(of: operation, { [self] in run() }) { return }
        let own = operation._readState { $0.threadQuality }
        let floor = queue?._threadQuality ?? .default
        let quality = own.map { $0.rank < floor.rank ? floor : $0 } ?? floor
        // A queue of its own: Dispatch's serial queues run on its overcommitting pool, so a
        // completion block that waits (for its queue, say) never holds up another.
        DispatchQueue(label: "swift-operations.completion", qos: DispatchQoS(quality)).async { [self] in run() }
    }

    private func run() {
        // Announcements this thread makes from now on are the finishing thread's own.
        if announcement != nil { operation._announcesFinish(on: OperationEvent.currentThread) }
        if let completionBlock = completionBlock.take() {
            CompletionBlockScope.run(completionBlock, of: operation, in: queue)
            // Released before anyone waiting is woken.
            _ = consume completionBlock
        }
        if let queue {
            queueWaiters += queue._operationFinished(operation, releasesSlot: false, leaves: true, announcing: announcing)
        }
        let waiters = queueWaiters
        queueWaiters = []
        operation._completeFinish(announcement, waiters, in: queue, announcing: announcing, observed: observed)
    }
}
