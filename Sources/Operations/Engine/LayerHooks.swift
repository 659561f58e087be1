// Where the layers above the engine plug in. The engine names nothing declared in those
// layers (Async, Observation, Diagnostics, and the modules built on `Operations`): it calls
// the requirements below, which the layers implement in their own folders.

/// What the engine asks of an operation beyond its own state. `Operation` conforms (here, so
/// that a layer that stopped implementing a hook would not compile): `_startsWithoutBlocking`
/// and `_escalateWork(to:)` are members of the class that the async layer's subclass
/// overrides; `_joined(_:)` and `_gatesOpened()` are implemented by the observation layer.
protocol OperationLayerHooks: AnyObject {
    /// Whether `start()` only hands the work to a task and returns: any thread may then
    /// start it, without taking a worker.
    var _startsWithoutBlocking: Bool { get }

    /// An escalation raised the operation to `quality`: raise the work it runs outside the
    /// queue's workers (an `async` body's task).
    func _escalateWork(to quality: QualityOfService)

    /// The operation joined `queue`. Called under the queue's lock and its own, before
    /// anything can start or cancel it there: record it, run nothing.
    func _joined(_ queue: OperationQueue)

    /// The operation's gates let it go: tell whoever observes its readiness. Called with no
    /// lock held, before the engine rechecks the readiness.
    func _gatesOpened()

    /// Whether anything observes the operation's keys now (no lock).
    var _hasObservers: Bool { get }

    /// An operation that runs at `quality` waits for this one (a new dependency edge): raise
    /// it and what it waits for (the wait graph's walk). No lock held.
    func _escalate(to quality: QualityOfService)

    /// Tells the observers of `key` that it is about to change, or changed (no lock held).
    func _announceWillChange(_ key: String)
    func _announceDidChange(_ key: String)
}

extension Operation: OperationLayerHooks {}

/// What the layers above keep with one operation (start hooks, lifecycle taps, values), in
/// its side box: nil for most operations. The engine tells it the finish.
protocol OperationLayerState: AnyObject {
    /// The operation finished with `outcome` (computed only when asked for). Called under
    /// the operation's lock: keep what to tell, run nothing. Returns whether anything is to
    /// be told after the lock, and what the caller releases after the lock (start hooks
    /// that never ran).
    func operationFinished(
        with outcome: @autoclosure () -> Operation.Outcome?
    ) -> (toTell: Bool, unused: [@Sendable () -> Void])

    /// The operation's work starts (under its lock, in the section that decided it).
    func operationStarted()

    /// The operation was cancelled with `reason` (under its lock, in the section that decided it).
    func operationCancelled(reason: (any Error)?)
}

/// What the engine asks of a queue's observation layer. `OperationQueue` conforms (here);
/// the observation layer implements the requirements.
protocol QueueLayerHooks: AnyObject {
    /// Whether anything observes the queue's keys now (no lock).
    var _hasObservers: Bool { get }

    /// `operations` are about to be added: the queue's enqueue hooks see them first (no
    /// lock held; the hooks are user code).
    func _runEnqueueHooks(_ operations: some Collection<Operation>)

    /// The queue's `operations` and `operationCount` are about to change (no lock held).
    func _membershipWillChange()

    /// The queue's `operations` and `operationCount` changed (no lock held).
    func _membershipDidChange()

    /// The queue's `key` (a setting) is about to change, or changed (no lock held).
    func _settingWillChange(_ key: String)
    func _settingDidChange(_ key: String)

    /// A worker of the queue (in `slot`; nil: the thread that freed a slot) starts
    /// `operation`. Called under the operation's lock, only while the queue has event
    /// handlers: record it, run nothing.
    func _starts(_ operation: Operation, slot: Int?)

    /// `operation` was cancelled. Called under the operation's lock, only when it is in this
    /// queue: record it, run nothing.
    func _cancelled(_ operation: Operation)

    /// `operation` finished (cancelled, completing a cancellation first when
    /// `completedCancellation`). Called under the operation's lock, only when it is in this
    /// queue: record it, run nothing.
    func _finished(_ operation: Operation, completedCancellation: Bool, wasCancelled: Bool)

    /// Events were recorded under locks now released: deliver them to the queue's
    /// handlers (no lock held; nothing when it has none).
    func _eventsRecorded()
}

extension OperationQueue: QueueLayerHooks {}
