import Synchronization

/// Runs operations: Foundation's `OperationQueue`, with Darwin's semantics on every platform.
///
/// Among ready operations the highest ``Operation/queuePriority`` starts first, and equal
/// priorities start in the order added. A queue keeps its operations, and itself, alive
/// until they finish.
///
/// - Note: `@unchecked Sendable` (as Foundation's): all mutable state is in `core`, guarded
///   by its lock (and the progress's counts by `progressCounter`).
open class OperationQueue: NSObject, ProgressReporting, @unchecked Sendable {
    /// "As many as the system sees fit": operations that block overlap well beyond the
    /// processor count (the queue adds workers while the running ones are blocked).
    public static let defaultMaxConcurrentOperationCount: Int = -1

    let core: Locked<QueueCore>
    /// Set once ``progress`` was read: until then finishing operations skip it.
    let isProgressRequested = Atomic<Bool>(false)
    let progressCounter = ProgressCounter()
    /// Handlers of ``addEventHandler(_:)``; `hasEventHandlers` is the cheap check.
    let eventHandlers = Locked(EventHandlers())
    let hasEventHandlers = Atomic<Bool>(false)
    /// The events recorded and not yet delivered, in the order they happened.
    let eventLog = Locked(EventLog())
    /// Hooks of ``addEnqueueHook(_:)``; `hasEnqueueHooks` is the cheap check.
    let enqueueHooks = Locked(EnqueueHooks())
    let hasEnqueueHooks = Atomic<Bool>(false)
    /// Scopes of ``addTaskScope(_:)``; `hasTaskScopes` is the cheap check.
    let taskScopes = Locked(TaskScopes())
    let hasTaskScopes = Atomic<Bool>(false)
    /// `qualityOfService`'s raw value, for workers to read without the lock.
    /// What the queue's threads run at (`QueueCore.threadQualityOfService`), read without
    /// the lock on every start.
    let _threadQualityRawValue = Atomic<Int>(QualityOfService.default.rawValue)
    /// Values the layers above keep with the queue, by type (made on first use).
    private let layerValues = Locked<[ObjectIdentifier: AnyObject]>([:])

    /// The value of type `T` a layer keeps with this queue, made by `make` on first use.
    // `@Sendable`: a closure of the caller's task, passed along with the locked dictionary,
    // would tie the dictionary to that task (the compiler refuses it).
    package final func _layerValue<T: AnyObject & Sendable>(_ make: @Sendable () -> T) -> T {
        layerValues.withLock { $0.layerValue(madeBy: make) }
    }

    public override init() {
        core = Locked(QueueCore(isMain: false))
        super.init()
    }

    init(mainQueue: Void) {
        var state = QueueCore(isMain: true)
        state.setName("NSOperationQueue Main Queue")
        core = Locked(state)
        super.init()
        _threadQualityRawValue.store(QualityOfService.userInteractive.rawValue, ordering: .relaxed)
    }

    // MARK: Adding

    /// Adds an operation.
    /// - Important: Adding an operation that is already in a queue (this one or another),
    ///   executing or finished is a programmer error.
    open func addOperation(_ op: Operation) {
        _add(CollectionOfOne(op))
    }

    /// Adds operations, all or none: if any is refused, none is added. With
    /// `waitUntilFinished: true`, returns when all of them have finished.
    open func addOperations(_ ops: [Operation], waitUntilFinished wait: Bool) {
        _add(ops, call: "addOperations")
        if wait {
            var report = StallReport(call: .addOperations(self))
            for (index, operation) in ops.enumerated() {
                operation._waitUntilFinished(report: &report) { ops[index...].filter { !$0.isFinished } }
            }
        }
    }

    /// Wraps `block` in a ``BlockOperation`` with the queue's quality of service and adds it
    /// through ``addOperation(_:)-(Operation)``, as Foundation does: a subclass that overrides
    /// that method sees it.
    open func addOperation(_ block: @escaping @Sendable () -> Void) {
        _addMade(BlockOperation(block: block))
    }

    // MARK: Barriers

    /// Runs `barrier` after every operation added before it has finished; no operation
    /// added after it starts until it has run (like a Dispatch barrier) — not even a
    /// cancelled one, for its pass through `start()`.
    ///
    /// The barrier is a ``BlockOperation`` with hidden dependencies: on the operations in
    /// the queue now, and, from every operation added after it, on the barrier.
    open func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
        let operation = BlockOperation(block: barrier)
        _runEnqueueHooks(CollectionOfOne(operation))
        let observed = _hasObservers
        if observed { _membershipWillChange() }
        let earlier = _admitBarrier(operation)
        if observed { _membershipDidChange() }
        _deliverEvents()
        for member in earlier {
            operation._addEdge(from: member, visible: false)
        }
        // Waits for every earlier member now: the hold `_admitBarrier` took goes.
        operation._dependencyFinished()
    }

    // MARK: State

    /// How many operations may execute at once; ``defaultMaxConcurrentOperationCount`` (−1)
    /// lets the queue decide. 1 makes a serial FIFO queue (priorities still apply among
    /// ready operations). A change affects only operations not yet started.
    /// - Important: A negative value other than −1 is a programmer error.
    open var maxConcurrentOperationCount: Int {
        get { _snapshot.limit.maxConcurrentOperationCount }
        set {
            guard let limit = ConcurrencyLimit(maxConcurrentOperationCount: newValue) else {
                Misuse.fail("maxConcurrentOperationCount of \(_misuseName) set to \(newValue); it must be at least 0, or -1 (defaultMaxConcurrentOperationCount)")
            }
            _change(.limit(limit))
        }
    }

    /// While true, no operation starts; running ones continue.
    open var isSuspended: Bool {
        get { _isSuspendedNow }
        set {
            let resumption = _change(.suspended(newValue))
            // Left for the resumption: gates that were deciding, then gates that were due.
            for action in resumption.actions { action() }
            for operation in resumption.gated { operation._consultGatesIfDue() }
        }
    }

    /// Defaults to `"NSOperationQueue 0x…"`.
    open var name: String? {
        get { _snapshot.name ?? "NSOperationQueue \(_address)" }
        set { _change(.name(newValue)) }
    }

    /// Reads `.background` for queues you create until set (Apple's documentation) and
    /// `.userInteractive` for ``main``. An operation's own quality of service, when set, wins.
    ///
    /// - Note: Until you set one, the queue's operations run at the default thread priority
    ///   (nice 0 on Linux), as with Linux's Foundation: not at background priority, which
    ///   Linux runs at nice 10 and which would give a server's queues a tenth of a normal
    ///   thread's share of a busy machine. Set `.background` or `.utility` explicitly for
    ///   work that should yield to the rest of the machine.
    open var qualityOfService: QualityOfService {
        get { _snapshot.qualityOfService }
        set { _change(.qualityOfService(newValue)) }
    }

    /// Whether ``qualityOfService`` was set (for groups, which give their queue their own).
    package final var _isQualityOfServiceSet: Bool { _qualityOfServiceSet != nil }

    /// The Dispatch queue the operations run on; nil means the queue's own threads.
    /// - Important: Setting it while the queue has operations, or to the main dispatch
    ///   queue, is a programmer error.
    open var underlyingQueue: DispatchQueue? {
        get {
            let state = _snapshot
            return state.isMain ? DispatchQueue.main : state.underlyingQueue
        }
        set {
            if let newValue, newValue.label == DispatchQueue.main.label {
                Misuse.fail("underlyingQueue of queue \"\(name ?? "?")\" cannot be the main dispatch queue; use OperationQueue.main")
            }
            if let refusal = _setUnderlyingQueue(newValue) { Misuse.fail("underlyingQueue of queue \"\(name ?? "?")\" cannot be set: \(refusal)") }
        }
    }

    /// The operations that have not finished yet, in the order added.
    /// - Note: Racy by nature, as on Darwin, where it is deprecated.
    open var operations: [Operation] { _members }

    /// The number of operations that have not finished yet.
    open var operationCount: Int { _memberCount }

    /// Reports nothing until `totalUnitCount` is set; then every operation that finishes
    /// adds one completed unit.
    open var progress: Progress {
        let progress = _layerValue { QueueProgress() }.progress
        isProgressRequested.store(true, ordering: .releasing)
        return progress
    }

    /// The queue's progress, kept with the queue once asked for.
    /// - Note: `@unchecked Sendable`: a `Progress` guards its counts itself (and
    ///   `progressCounter` adds to them).
    private final class QueueProgress: @unchecked Sendable {
        let progress = Progress(parent: nil, userInfo: nil)
    }

    /// Counts a finished operation in the progress, once the progress was asked for.
    final func _countProgress() {
        guard isProgressRequested.load(ordering: .acquiring) else { return }
        let progress = _layerValue { QueueProgress() }.progress
        guard progress.totalUnitCount > 0 else { return }
        progressCounter.add(1, to: .completed, of: progress)
    }

    /// Cancels every operation in the queue. Cancelled operations still pass through
    /// `start()` to finished, and their completion blocks run.
    ///
    /// Those not running are cancelled first (the newest first), then the running ones: a
    /// running operation that stops when cancelled frees its slot, and no operation that
    /// was waiting starts its work in it.
    open func cancelAllOperations() {
        Operation._cancelNotRunningFirst(operations, reason: nil)
    }

    /// Blocks until the queue has no operations, including operations added while waiting
    /// and asynchronous ones, and their completion blocks have run.
    ///
    /// Called from a completion block of one of the queue's operations, or from an observer
    /// of its `isFinished`, it waits for all the other operations (not for that one, which
    /// would wait for itself).
    ///
    /// When the operations cannot make progress (see ``OperationDiagnostic/stallReportDelay``),
    /// says so once, through ``OperationDiagnostic/handler``, and goes on waiting.
    open func waitUntilAllOperationsAreFinished() {
        // Called from completion blocks of this queue's operations: those operations leave
        // the queue only when their blocks return, so the wait is for all the others.
        let ownCompletionBlocks = CompletionBlockScope.count(in: self)
        let semaphore = _waitForEmptiness(allBut: ownCompletionBlocks) { () -> (QueueWaiter, DispatchSemaphore) in
            let semaphore = DispatchSemaphore(value: 0)
            return (.thread(semaphore), semaphore)
        }
        guard let semaphore else { return }
        var report = StallReport(call: .waitUntilAllOperationsAreFinished(self))
        // Every member: a wait held up by one names it.
        report.wait(on: semaphore) { self._members }
    }

    #if !canImport(ObjectiveC)
    override func _observableValue(forKey key: String) -> Any? {
        switch key {
        case "operationCount": operationCount
        case "operations": operations
        case "isSuspended": isSuspended
        case "maxConcurrentOperationCount": maxConcurrentOperationCount
        case "name": name.map { $0 as Any } ?? NSNull()
        case "qualityOfService": qualityOfService
        default: nil
        }
    }
    #endif

    // MARK: Main and current

    /// The serial queue that runs operations on the main thread (`DispatchQueue.main`),
    /// with quality of service `.userInteractive`. ``cancelAllOperations()`` and the other
    /// rules work on it as on any queue.
    ///
    /// A class property a subclass may override, as in Foundation (a framework's queue
    /// class may return its own main queue); the library itself always means this one.
    open class var main: OperationQueue { _main }

    /// The main queue, whatever a subclass's ``main`` returns.
    static let _main = OperationQueue(mainQueue: ())

    /// The queue running the current operation; ``main`` on the main thread; nil elsewhere.
    open class var current: OperationQueue? {
        if let context = WorkerContext.current { return context.queue }
        if let queue = OperationQueue._startingInline { return queue }
        // Inside the body of an asynchronous operation (`TaskOperation`), also after a
        // suspension point.
        if let queue = OperationQueue._taskQueue { return queue }
        return Thread.isMainThread ? _main : nil
    }

    /// The `WorkerContext` of the worker running on this thread (unretained; the worker
    /// keeps it alive).
    static let _current = ThreadLocalPointer()
}
