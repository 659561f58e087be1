import Synchronization

/// A single unit of work: Foundation's `Operation`, with Darwin's semantics on every platform.
///
/// Subclass it and override ``main()`` for synchronous work, or override ``start()``,
/// ``isAsynchronous``, ``isExecuting`` and ``isFinished`` and announce changes with
/// `willChangeValue(forKey:)`/`didChangeValue(forKey:)` for asynchronous work.
/// An operation runs at most once and belongs to at most one queue, ever.
///
/// - Note: `@unchecked Sendable` (as Foundation's): all mutable state is in `core`, guarded
///   by its lock, except the queue links, which only the lock of the queue the operation
///   was added to guards.
open class Operation: NSObject, @unchecked Sendable {
    /// The state; reached only through the engine's `_update` (`Engine/Operation/OperationStorage.swift`),
    /// which publishes `visible`, and read through `_readState`.
    let core = Locked(OperationCore())
    /// The state the base getters report (`OperationCore.VisibleFlags`), published under
    /// the lock at every change so that the getters need no lock: tutorial loops check
    /// `isCancelled` on every iteration.
    let visible = Atomic<UInt8>(OperationCore.VisibleFlags.ready)
    /// Set in the `init` of an operation whose `main()` starts work that finishes it later
    /// (an async body's task, a group's children): `start()` is not done with it when `main()`
    /// returns. Fills the padding after `visible`; written only in `init` (so unchecked).
    @exclusivity(unchecked) package final var _finishesLater = false

    // Queue links, guarded by the owning queue's lock (so without the run-time exclusivity
    // checks, which that lock makes redundant).
    /// The order in which the queue added it (`_addSequence`, in `ReadyList.swift`):
    /// declared here, after `visible`, so that they fill its padding.
    @exclusivity(unchecked) final var _addSequenceHigh: UInt16 = 0
    @exclusivity(unchecked) final var _addSequenceLow: UInt32 = 0
    /// Next in the queue's ready list of the same priority.
    @exclusivity(unchecked) final var _nextReady: Operation?
    /// Next in the queue's list of members (the order in which they were added).
    @exclusivity(unchecked) final var _nextMember: Operation?
    /// Previous in the list of members. `Unmanaged`: the member list holds the previous
    /// operation (through its forward links) for as long as this one is listed.
    @exclusivity(unchecked) final var _previousMember: Unmanaged<Operation>?
    /// Where it is in the queue's ready list, while it is there (see `ReadyPlace`).
    @exclusivity(unchecked) final var _readyPlace = ReadyPlace.first

    /// Position in the topological order of the dependency graph (see `DependencyGraph`).
    package final let _position = Atomic<Int>(DependencyGraph.nextPosition.add(1, ordering: .relaxed).newValue)

    public override init() {
        super.init()
    }

    deinit {
        // The common case, no lock: nothing to hand to the pool. (`visible` is published
        // at every change of the state; nothing else can reach an object in its deinit.)
        guard visible.load(ordering: .acquiring) & OperationCore.VisibleFlags.holdsDependencies != 0 else { return }
        // Taken, not copied: the pool must hold the last reference.
        let (dependencies, hidden) = _takeDependencies()
        // Off the lists of dependencies that have not finished, before this object goes.
        _leaveDependentsLists(of: dependencies)
        _leaveDependentsLists(of: hidden)
        if !hidden.isEmpty { ReleasePool.release(consume hidden) }
        guard !dependencies.isEmpty else { return }
        ReleasePool.release(consume dependencies)
    }

    // MARK: State

    /// Whether ``cancel()`` was called.
    open var isCancelled: Bool { _visible(OperationCore.VisibleFlags.cancelled) }

    /// Whether the base ``start()`` is running ``main()``.
    open var isExecuting: Bool { _visible(OperationCore.VisibleFlags.executing) }

    /// Whether the operation has finished.
    open var isFinished: Bool { _visible(OperationCore.VisibleFlags.finished) }

    /// Deprecated alias of ``isAsynchronous``; subclasses may override either.
    open var isConcurrent: Bool { false }

    /// Whether the operation finishes after ``start()`` returns. Advice only, as in
    /// Foundation: queues always call ``start()``, and the base ``start()`` is done with the
    /// operation when ``main()`` returns, whatever this says. A subclass that finishes later
    /// overrides ``isFinished`` (and ``isExecuting``) and announces it.
    open var isAsynchronous: Bool { isConcurrent }

    /// True when every dependency has finished, or the operation was cancelled.
    /// Overrides must combine `super.isReady` and announce changes with
    /// `didChangeValue(forKey: "isReady")`.
    open var isReady: Bool { _visible(OperationCore.VisibleFlags.ready) }

    // MARK: Properties

    /// A name for debugging, timelines and misuse messages; nil by default.
    open var name: String? {
        get { _readState { $0.name } }
        set { _setName(newValue) }
    }

    /// The relative order among ready operations of one queue. Never overrides dependencies.
    ///
    /// Until it is set, an operation added to a queue that is not serial takes its band from
    /// its ``qualityOfService`` when added (as on Linux's Foundation): `.userInteractive` →
    /// `.veryHigh`, `.userInitiated` → `.high`, `.default` → `.normal`, `.utility` → `.low`,
    /// `.background` → `.veryLow`. Reads `.normal` until set.
    open var queuePriority: QueuePriority {
        get { _readState { $0.queuePriority } ?? .normal }
        set {
            // An operation already in its queue's ready list moves to its new band (when the
            // band it runs in changed).
            _setQueuePriority(newValue)
        }
    }

    /// Defaults to `.default`; when set, it wins over the queue's, except that an
    /// operation below its queue's quality of service runs at the queue's.
    open var qualityOfService: QualityOfService {
        get { _readState { $0.qualityOfService } ?? .default }
        set { _setQualityOfService(newValue) }
    }

    /// Deprecated; stored and reported, with no effect on scheduling.
    open var threadPriority: Double {
        get { _readState { $0.threadPriority } }
        set { _setThreadPriority(newValue) }
    }

    /// Runs once after the operation finishes (also when it was cancelled), on an
    /// unspecified thread, and is then released. Never inside the `start()` that finished
    /// the operation: a queue's worker runs it once `start()` returned, and otherwise it
    /// runs on another thread (see "Migrating from Foundation").
    open var completionBlock: (@Sendable () -> Void)? {
        get { _readState { $0.completionBlock } }
        set {
            // The old block is released after the lock: its captures' deinit is user code.
            let old = _swapCompletionBlock(newValue)
            _ = old
        }
    }

    // MARK: Running

    /// Runs the operation on the calling thread: calls ``main()`` unless cancelled, then sets
    /// the base state to finished. The operation is finished when ``isFinished`` reads
    /// true: at once, unless a subclass overrides ``isFinished`` — then when it announces
    /// that its own state is finished (see "Migrating from Foundation").
    /// - Important: Calling it on an executing operation, or by hand on one that is not
    ///   ready, is a programmer error.
    open func start() {
        let action = _decideStart()
        switch action {
        case .ignore:
            return
        case .misuseExecuting:
            Misuse.fail("start() called on \(_misuseName), which is already executing; an operation runs at most once")
        case .misuseNotReady:
            let composed = _visibleGated ? "; it has conditions or exclusivity categories, which are evaluated on its queue: add it to a queue instead" : ""
            Misuse.fail("start() called on \(_misuseName), which is not ready (isReady is false: unfinished dependencies or an overridden isReady)\(composed)")
        case .finishCancelled:
            _startCancelled()
        case .run:
            if _hasExtras {
                _runStartHooks()
                _deliverLifecycleEvents()
            }
            main()
            if _finishesWhenMainReturns {
                _finish(wasExecuting: true)
            }
        }
    }

    /// The work. The base implementation does nothing.
    open func main() {}

    /// Whether the base `start()` is done with the operation when `main()` returns: false
    /// for the library's own operations whose `main()` starts work that finishes them later
    /// (an async body's task, a group's children).
    final var _finishesWhenMainReturns: Bool { !_finishesLater }

    /// What `start()` does when it finds the operation cancelled (decided under the same
    /// lock as a start that runs): finish without running. A group first lets its
    /// children pass through its queue. Called without a lock held.
    func _startCancelled() {
        if let cancelledStart = _cancelledStart {
            cancelledStart()
            return
        }
        _finish(wasExecuting: false)
    }

    /// Releases what the operation keeps only to run (a `BlockOperation`'s blocks): called
    /// once when it finished, whether its work ran or it was cancelled.
    func _releaseWork() {}

    /// Whether `start()` only hands the work to a task and returns: it may start on any thread.
    var _startsWithoutBlocking: Bool { false }

    /// Raises the work run outside the queue's workers (an `async` body) after `_escalate(to:)`.
    func _escalateWork(to quality: QualityOfService) {}

    /// Runs the `async` body (`TaskOperation`) in a `BodySlot`'s task; the base has none.
    func _runBody(context: TaskBodyContext?, scopes: [TaskScope]) async {}

    /// Sets ``isCancelled``. Running code stops only if it checks; a pending operation
    /// becomes ready at once and finishes without running ``main()``. Does nothing once
    /// the operation has finished, or when it was cancelled already.
    open func cancel() {
        guard let (queue, waits) = _decideCancel() else { return }
        queue?._eventsRecorded()
        // What its gates took or are deciding is no longer needed: released before the
        // operation can start (its cancelled pass), which would leave it to the finish.
        if _visibleGated { _endGates(because: .cancelled) }
        if waits { _readinessChanged() }
        if _hasExtras { _deliverLifecycleEvents() }
    }

    /// Blocks the calling thread until the operation has finished and its completion
    /// block has run. Called from inside that completion block, it returns at once (the
    /// operation has finished; the block cannot wait for itself).
    ///
    /// When the operation cannot make progress (see ``OperationDiagnostic/stallReportDelay``),
    /// says so once, through ``OperationDiagnostic/handler``, and goes on waiting.
    open func waitUntilFinished() {
        var report = StallReport(call: .waitUntilFinished(self))
        _waitUntilFinished(report: &report) { [self] }
    }

    // MARK: Dependencies

    /// The operations this one waits for, in the order added.
    open var dependencies: [Operation] { _readState { $0.dependencies } }

    /// Makes this operation wait until `operation` has finished (or was cancelled and
    /// finished). Works across queues and for operations in no queue. Adding the same
    /// dependency twice has no effect.
    /// - Important: Making an operation depend on itself is a programmer error (the
    ///   process stops with a message). Closing a longer cycle prints a warning, or stops
    ///   with ``trapsOnDependencyCycles``.
    open func addDependency(_ operation: Operation) {
        _addEdge(from: operation, visible: true)
    }

    /// Removes a dependency. If it had not finished and nothing else holds this operation,
    /// the operation becomes ready at once.
    open func removeDependency(_ operation: Operation) {
        _removeEdge(from: operation)
    }

    // MARK: Observation

    /// Subclasses announce their own state (the classic asynchronous operation); the engine
    /// listens here as well as delivering to observers.
    ///
    /// A change that reaches `isFinished` (also through a dependent key such as `"state"`)
    /// is processed before the observers are told, so that they find the operation out of
    /// its queue and its dependents ready; other keys are delivered first, then handled.
    open override func didChangeValue(forKey key: String) {
        let stateKey = ObservationKey.stateKey(key)
        // Dependent keys: a framework announcing only "state" (observation branch).
        let affected = _affectedStateKeys(announced: key)
        if stateKey == .isFinished || affected.contains("isFinished") {
            // As on Darwin, the getter decides: a subclass that overrides `isFinished` is
            // finished when it says so.
            _processFinishThenAnnounce(.observers(key))
        } else {
            super.didChangeValue(forKey: key)
        }
        if stateKey == .isReady || affected.contains("isReady") {
            _readinessChanged()
        }
    }

    /// Tells the observers of `key` (the base `didChangeValue(forKey:)`, past the engine's).
    final func _observersDidChangeValue(forKey key: String) {
        super.didChangeValue(forKey: key)
    }

    #if !canImport(ObjectiveC)
    override func _observableValue(forKey key: String) -> Any? {
        switch key {
        case "isReady": isReady
        case "isExecuting": isExecuting
        case "isFinished": isFinished
        case "isCancelled": isCancelled
        case "isAsynchronous": isAsynchronous
        case "isConcurrent": isConcurrent
        case "name": name.map { $0 as Any } ?? NSNull()
        case "queuePriority": queuePriority.rawValue
        default: nil
        }
    }
    #endif

    /// Whether the composition layer attached anything (no lock).
    package final var _hasExtras: Bool { _visible(OperationCore.VisibleFlags.attachments) }

    /// Whether the operation has gates (no lock).
    final var _visibleGated: Bool { _visible(OperationCore.VisibleFlags.gated) }

    /// Whether the operation finished, as the engine knows it (no lock, no user code).
    package final var _isFinishingFlag: Bool { _visible(OperationCore.VisibleFlags.done) }

    /// Whether the operation was cancelled, as the engine knows it (no lock, no user code:
    /// readable under a layer's own lock).
    package final var _isCancelledFlag: Bool { _visible(OperationCore.VisibleFlags.cancelled) }

    @inline(__always)
    private func _visible(_ flag: UInt8) -> Bool {
        visible.load(ordering: .acquiring) & flag != 0
    }
}
