// A composite operation: children on a queue of its own, finishing after all of them.

@_spi(Engine) import Operations

/// An operation made of child operations, which run on the group's own queue; the group
/// finishes when every child has finished, including children added while it runs.
///
/// ```swift
/// let group = GroupOperation(operations: [download, resize])
/// group.addChild(upload)            // also from a child's main(), while the group runs
/// queue.addOperation(group)
/// ```
///
/// - Children start only once the group has started (its queue is suspended until then).
/// - The group finishes after its children, always: after their completion blocks, and for a
///   nested group, after the nested group's children.
/// - Cancelling the group cancels every unfinished child with the same reason (see
///   `Operation.cancel(with:)`): waiting children before running ones, so that none of
///   them starts its work in a slot a cancelled child frees, and dependents before what
///   they wait for. Children added afterwards are cancelled as they join.
///   A cancelled group still finishes only after its children.
/// - A child that fails (or is cancelled with a reason while the group is not) fails the
///   group: ``errors`` keeps every such error in the order they happened, and the first is
///   the group's error (`Operation.Outcome.failed(_:)`). ``FailurePolicy`` says whether
///   the other children finish or are cancelled at once.
/// - ``progress`` counts finished children, each by its weight.
///
/// - Note: `@unchecked Sendable`: the group's state is in a `Locked`; `childQueue`,
///   `failurePolicy` and `progress` never change after `init`.
open class GroupOperation: Operation, ProgressReporting, @unchecked Sendable {
    /// What the group does when a child fails.
    public enum FailurePolicy: Sendable {
        /// The other children run to the end; the group fails once all have finished.
        case finishAll
        /// The other children are cancelled at once, with the first error as the reason.
        case failFast
    }

    /// Where the group is in its life, for its children.
    private enum Stage {
        /// Not started: children wait in the suspended queue.
        case waiting
        /// Started (`main()` ran, or a cancelled start waits for the children).
        case running(cancelledStart: Bool)
        /// Every child finished: the group is finishing; no child may join.
        case closed
    }

    private struct State {
        var stage = Stage.waiting
        var pendingCount = 0
        /// The unfinished children, for cancellation.
        var unfinished: [ObjectIdentifier: Operation] = [:]
        var errors: [any Error] = []
        /// The group cancelled its children (it was cancelled, or failing fast): their
        /// cancellation reasons are not failures of their own.
        var cancelledChildren = false
        var cancellationReason: (any Error)?
        var isSuspendedByUser = false
        var suspensionGeneration = 0
        var everyChild: [Operation] = []
    }

    private let state = Locked(State())
    /// The queue the children run on (`package`: a recorder may watch it).
    package let childQueue = GroupChildQueue()
    /// What the group does when a child fails.
    public let failurePolicy: FailurePolicy
    /// Counts finished children by weight (``addChild(_:weight:)``); observable.
    public let progress: Progress
    /// Adds to `progress` (see `_addToProgress`).
    private let progressCounter = ProgressCounter()

    /// Creates a group with `operations` as its first children.
    public init(operations: [Operation] = [], failurePolicy: FailurePolicy = .finishAll) {
        self.failurePolicy = failurePolicy
        progress = Progress.discreteProgress(totalUnitCount: 0)
        super.init()
        // Finishes when its last child has, not when `main()` returns.
        _finishesLater = true
        // Unowned: the operation holds the closure, and only its own start calls it.
        _setCancelledStart { [unowned self] in self._startCancelled() }
        childQueue.owner = self
        childQueue.isSuspended = true
        childQueue.name = "GroupOperation children"
        for operation in operations { addChild(operation) }
    }

    /// A group that goes away without having run lets its children go too: they wait in its
    /// suspended queue, which holds them and which they hold (as their queue), so they are
    /// cancelled and let through, and leave it.
    ///
    /// The children are released through the library's iterative release: groups nested
    /// thousands deep go away without a stack frame per level.
    deinit {
        let neverRan = state.withLock { state -> Bool in
            if case .waiting = state.stage { return true }
            return false
        }
        if neverRan {
            childQueue.cancelAllOperations()
            childQueue.isSuspended = false
        }
        let children = state.withLock { state -> [Operation] in
            defer {
                state.everyChild = []
                state.unfinished = [:]
            }
            return state.everyChild
        }
        ReleasePool.release(children)
    }

    // MARK: Children

    /// Adds a child: it runs on the group's queue once the group has started. Allowed until
    /// the group finishes, also from a child's work (a child may produce more).
    ///
    /// `weight` is the child's share of ``progress``.
    /// - Important: Adding a child to a group that has finished (or whose last child has
    ///   finished and which is finishing) is a programmer error, as is a child that is in a
    ///   queue already, executing or finished.
    open func addChild(_ operation: Operation, weight: Int64 = 1) {
        _addChild(operation, weight: weight, announcesProduced: true)
    }

    /// An operation a child's condition contributes (a "sign in"): a child like the
    /// others (cancelled with the group, finished before it), adding no unit of progress,
    /// not announced as produced, and whose failure is its condition's to judge, not the
    /// group's. False when the group has finished its children (nobody in it needs it).
    @discardableResult
    final func _addContributed(_ operation: Operation, for guarded: Operation) -> Bool {
        _addChild(operation, weight: 0, announcesProduced: false, contributed: guarded)
    }

    @discardableResult
    private func _addChild(_ operation: Operation, weight: Int64, announcesProduced: Bool, contributed guarded: Operation? = nil) -> Bool {
        let contributed = guarded != nil
        if weight < 0 {
            Misuse.fail("addChild: the weight of \(operation._misuseName) in \(_misuseName) is \(weight); it must be at least 0")
        }
        let identity = ObjectIdentifier(operation)
        let admission = state.withLock { state -> (admitted: Bool, cancelWith: (any Error)??, produced: Bool) in
            if case .closed = state.stage { return (false, nil, false) }
            guard state.unfinished.updateValue(operation, forKey: identity) == nil else { return (true, nil, false) }
            state.pendingCount += 1
            state.everyChild.append(operation)
            let running: Bool
            if case .running = state.stage { running = true } else { running = false }
            return (true, state.cancelledChildren ? .some(state.cancellationReason) : nil, running)
        }
        guard admission.admitted else {
            if contributed { return false }
            Misuse.fail("addChild: \(_misuseName) has finished its children (it is finishing or finished); \(operation._misuseName) cannot join it")
        }
        _addToProgress(total: true, weight)
        if !contributed { _childAdded(operation) }
        operation._onFinish(for: .operation(WeakOperationReference(self))) { [weak self] outcome in
            self?._childFinished(identity, outcome: contributed ? .succeeded : outcome, weight: weight)
        }
        if let cancel = admission.cancelWith {
            if let reason = cancel { operation.cancel(with: reason) } else { operation.cancel() }
        }
        // Raised with the group: a child that joins after an escalation is raised too.
        if let raised = _escalatedQuality { operation._escalate(to: raised) }
        if let guarded {
            childQueue._addPrerequisite(operation, of: guarded)
        } else {
            childQueue.addOperation(operation)
        }
        if announcesProduced, admission.produced, _hasExtras { _postLifecycleEvent(.produced(operation)) }
        return true
    }

    /// The group's name; its children's queue is named after it ("<name> children"), so that
    /// messages about that queue name the group.
    open override var name: String? {
        get { super.name }
        set {
            super.name = newValue
            childQueue.name = "\(newValue ?? "GroupOperation") children"
        }
    }

    /// A child joined (not one a condition contributed), by whatever way: a subclass that
    /// keeps its children's results hears of each here.
    func _childAdded(_ operation: Operation) {}

    /// Whether `operation` was added as a child (and has not finished).
    final func _isChild(_ operation: Operation) -> Bool {
        state.withLock { $0.unfinished[ObjectIdentifier(operation)] != nil }
    }

    /// Adds several children (see ``addChild(_:weight:)``).
    public func addChildren(_ operations: [Operation]) {
        for operation in operations { addChild(operation) }
    }

    /// Adds a child (``addChild(_:weight:)``): the spelling of the WWDC sample code's group.
    public func addOperation(_ operation: Operation) {
        addChild(operation)
    }

    /// Adds several children (``addChild(_:weight:)``).
    public func addOperations(_ operations: [Operation]) {
        addChildren(operations)
    }

    /// The children that have not finished, and whether the group has opened their queue
    /// (it has started), read together for the wait graph.
    final var _unfinishedChildrenAndOpened: ([Operation], Bool) {
        state.withLock { state in
            if case .waiting = state.stage { return (Array(state.unfinished.values), false) }
            return (Array(state.unfinished.values), true)
        }
    }

    /// Whether the group holds its children's queue until it starts (it has not started):
    /// the library's suspension, as opposed to ``isChildQueueSuspended``.
    final var _holdsChildrenUntilStart: Bool {
        state.withLock { state in
            guard case .waiting = state.stage else { return false }
            return !state.isSuspendedByUser
        }
    }

    /// Every child added so far, in the order added.
    public var children: [Operation] { state.withLock { $0.everyChild } }

    /// The errors of the children that failed, in the order they failed; the first is the
    /// group's error.
    public var errors: [any Error] { state.withLock { $0.errors } }

    // MARK: The children's queue

    /// How many children may run at once (the group queue's limit); by default as many as
    /// the system sees fit.
    public var maxConcurrentChildCount: Int {
        get { childQueue.maxConcurrentOperationCount }
        set { childQueue.maxConcurrentOperationCount = newValue }
    }

    /// The quality of service of the group's queue. Until set, the queue takes, when the
    /// group starts, the one the group runs at: its own, never below its queue's; its
    /// queue's when it has none.
    public var childQualityOfService: QualityOfService {
        get { childQueue.qualityOfService }
        set { childQueue.qualityOfService = newValue }
    }

    /// While true, no further child starts (running ones continue). Independent of the
    /// group having started: children start only when the group runs and this is false.
    public var isChildQueueSuspended: Bool {
        get { state.withLock { $0.isSuspendedByUser } }
        set {
            state.withLock { state in
                state.isSuspendedByUser = newValue
                state.suspensionGeneration += 1
            }
            _applySuspension()
        }
    }

    /// Makes the queue's suspension match the state; loops when the state changed while it
    /// applied it, so that the last change always wins.
    private func _applySuspension() {
        var applied = -1
        while true {
            let (generation, suspended) = state.withLock { state -> (Int, Bool) in
                let running: Bool
                if case .waiting = state.stage { running = false } else { running = true }
                return (state.suspensionGeneration, state.isSuspendedByUser || !running)
            }
            if generation == applied { return }
            childQueue.isSuspended = suspended
            applied = generation
        }
    }

    // MARK: Running

    /// Always true: the group finishes when its last child has.
    open override var isAsynchronous: Bool { true }


    /// A start that finds the group cancelled (the decision `start()` makes under its lock,
    /// so a cancellation racing the start cannot skip this): the group opens its queue so
    /// that its (cancelled) children pass through, and finishes after them.
    private func _startCancelled() {
        // `cancel()` makes the group ready before it reaches the children: a start in
        // between cancels them itself (once: see `_cancelChildren`) before they can start.
        _cancelChildren(reason: _cancellationReason, again: true)
        if _open(cancelledStart: true) { _finishGroup(cancelledStart: true) }
    }

    /// Opens the group's queue. A subclass that overrides it calls `super.main()` to add
    /// children and start them.
    open override func main() {
        if !childQueue._isQualityOfServiceSet {
            childQueue.qualityOfService = _runQuality
        }
        if _open(cancelledStart: false) { _finishGroup(cancelledStart: false) }
    }

    /// Moves to running and lets the children start; true when there is no child to wait
    /// for (the group finishes now).
    private func _open(cancelledStart: Bool) -> Bool {
        let finishesNow = state.withLock { state -> Bool in
            guard case .waiting = state.stage else { return false }
            state.suspensionGeneration += 1
            if state.pendingCount == 0 {
                state.stage = .closed
                return true
            }
            state.stage = .running(cancelledStart: cancelledStart)
            return false
        }
        _applySuspension()
        return finishesNow
    }

    /// Cancels the group and every unfinished child, with the same reason.
    /// - Note: Nested groups are cancelled depth first, on the cancelling thread's stack: a
    ///   few hundred bytes per level (10,000 levels take a few megabytes).
    open override func cancel() {
        super.cancel()
        guard isCancelled else { return }
        let reason = _cancellationReason
        _cancelChildren(reason: reason)
    }

    /// Cancels the unfinished children, once; `again` cancels them all even when a
    /// cancellation is already under way on another thread (cancelling twice is harmless):
    /// a cancelled start must not open the queue before every child is cancelled.
    private func _cancelChildren(reason: (any Error)?, again: Bool = false) {
        let (children, reason) = state.withLock { state -> ([Operation], (any Error)?) in
            if state.cancelledChildren {
                guard again else { return ([], nil) }
                return (Array(state.unfinished.values), state.cancellationReason)
            }
            state.cancelledChildren = true
            state.cancellationReason = reason
            return (Array(state.unfinished.values), reason)
        }
        // Waiting children before running ones, and dependents before what they wait for:
        // no child starts its work in a slot that a cancelled child frees.
        // (The form with a reason for each: one frame fewer per level of nested groups.)
        Operation._cancelNotRunningFirst(children.map { ($0, reason) })
    }

    private func _childFinished(_ identity: ObjectIdentifier, outcome: Outcome, weight: Int64) {
        // Counted before the child leaves the count below: whichever child finishes the
        // group, every child's unit is in the progress by then.
        _addToProgress(total: false, weight)
        let (finishes, cancelledStart, failFastReason) = state.withLock { state -> (Bool, Bool, (any Error)?) in
            state.unfinished[identity] = nil
            state.pendingCount -= 1
            var failFast: (any Error)?
            let error: (any Error)?
            switch outcome {
            case .failed(let failure): error = failure
            case .cancelled(let reason): error = state.cancelledChildren ? nil : reason
            case .succeeded: error = nil
            }
            if let error {
                state.errors.append(error)
                if failurePolicy == .failFast, !state.cancelledChildren { failFast = error }
            }
            guard state.pendingCount == 0, case .running(let cancelledStart) = state.stage else {
                return (false, false, failFast)
            }
            state.stage = .closed
            return (true, cancelledStart, failFast)
        }
        if let failFastReason { _cancelChildren(reason: failFastReason) }
        if finishes { _finishGroup(cancelledStart: cancelledStart) }
    }

    private func _finishGroup(cancelledStart: Bool) {
        if let first = state.withLock({ $0.errors.first }) { _recordFailure(first) }
        _finish(wasExecuting: !cancelledStart)
    }

    // MARK: Progress

    /// Adds `weight` units to the progress's total or completed count.
    private func _addToProgress(total: Bool, _ weight: Int64) {
        guard weight > 0 else { return }
        progressCounter.add(weight, to: total ? .total : .completed, of: progress)
    }
}
