// Starting and finishing: the decisions `start()` and the finish make under the operation's
// lock, and the waiters a finish wakes.

// MARK: - Start and finish

extension OperationCore {
    enum StartAction {
        case run, finishCancelled, ignore, misuseExecuting, misuseNotReady
    }

    /// `start()` was called. `reportedReady` is what the `isReady` getter said, read
    /// before the lock for a start by hand; nil for a start by a queue worker.
    mutating func start(reportedReady: Bool?) -> StartAction {
        switch phase {
        case .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished:
            // The base state says finished: as on Darwin, starting again does nothing.
            return .ignore
        case .executing:
            return .misuseExecuting
        case .dispatched:
            if cancellation.isCancelled { return .finishCancelled }
            mustApply(.start)
            return .run
        case .idle, .waiting, .checking, .parked, .ready:
            if cancellation.isCancelled { return .finishCancelled }
            if !(reportedReady ?? isInternallyReady) { return .misuseNotReady }
            mustApply(.start)
            return .run
        }
    }

    /// The base `start()` is done with the operation: the base state says finished. False
    /// when the operation finished already (a subclass announced `isFinished` from inside
    /// `main()`, or before a cancelled start).
    mutating func baseFinish() -> Bool {
        apply(.baseFinish)
    }

    /// The base finish was announced and the `isFinished` getter read false: the operation
    /// awaits its subclass's own announcement. Nothing when the subclass's announcement
    /// finished it meanwhile.
    mutating func baseFinishAnnounced() {
        guard case .announcingBaseFinish = phase else { return }
        mustApply(.baseFinishAnnounced)
    }

    /// What a quiet finish leaves to do after the lock: free the slot in `queue` and leave it.
    struct QuietFinish {
        var queue: OperationQueue?
        var releasesSlot: Bool
    }

    /// The base finish of an operation that has nothing to hand over — no dependents, no
    /// waiters, no completion block, nothing attached, not cancelled — taken through every
    /// step (`baseFinish`, `finish`, `processed`, `complete`) in this one section: it
    /// succeeded and is finished. Nil, and nothing changed, for any other operation (the
    /// caller takes the full path).
    mutating func finishQuietly() -> QuietFinish? {
        guard case .executing = phase, extras == nil, dependents.isEmpty, finishWaiters.isEmpty,
            !cancellation.isCancelled
        else { return nil }
        mustApply(.baseFinish)
        guard case .finishing(let byQueue, _)? = phase.after(.finish) else {
            preconditionFailure("Operations: a quiet finish found phase \(phase.kind) after the base finish")
        }
        phase = .finishing(byQueue: byQueue, .succeeded)
        mustApply(.processed)
        mustApply(.complete)
        defer { queue = nil }
        return QuietFinish(queue: queue, releasesSlot: byQueue)
    }

    /// What finishing hands over to be done once the lock is released.
    struct Finish {
        var outcome: OutcomeKind
        /// The operations waiting for this one, as strong references made under the lock
        /// (see `DependentReference`).
        var dependentsToTell: Dependents
        var completionBlock: (@Sendable () -> Void)?
        var queue: OperationQueue?
        var releasesSlot: Bool
        /// Set when the finish also completed a cancellation that `cancel()` was announcing.
        var completedCancellation: Bool
        /// Errors the outcome does not keep (boxed, rare), to be dropped after the lock.
        var unusedErrors: OperationExtras?
        /// Someone waits for the operation: its queue's bookkeeping is done before they wake
        /// (a wait returns with the operation out of its queue), not left to its worker.
        var hasWaiters: Bool
    }

    /// The operation finished. Returns the work to do, once; nil when it already finished.
    /// Decides the outcome: a cancellation (also one still being announced) wins, then a
    /// reported failure.
    mutating func finish() -> Finish? {
        guard case .finishing(let byQueue, _)? = phase.after(.finish) else { return nil }
        let completedCancellation = completeCancellation()
        let kind: OutcomeKind = cancellation.isCancelled ? .cancelled : extras?.failure != nil ? .failed : .succeeded
        phase = .finishing(byQueue: byQueue, kind)
        // Errors the outcome does not keep (a reason no `cancel()` took, a failure that lost
        // to a cancellation) go to the caller, to be dropped after the lock.
        var unused: OperationExtras?
        if let extras, extras.offeredCancellationReason != nil || (kind == .cancelled && extras.failure != nil) {
            let box = OperationExtras()
            box.offeredCancellationReason = extras.offeredCancellationReason.take()
            if kind == .cancelled { box.failure = extras.failure.take() }
            unused = box
        }
        // Made strong under the lock, where each is still allocated; the list is emptied.
        let waiting = Dependents(taking: &dependents)
        // Taken from the side box in place (most operations have no box: one compare).
        let completionBlock = extras?.completionBlock.take()
        return Finish(
            outcome: kind, dependentsToTell: waiting, completionBlock: completionBlock, queue: queue,
            releasesSlot: byQueue, completedCancellation: completedCancellation, unusedErrors: unused,
            hasWaiters: !finishWaiters.isEmpty)
    }

    /// Takes an announcement of the finish made on another thread while this one is
    /// processed or announced: `later` is made by the thread doing that, after the queue is
    /// done with the operation and before any waiter is woken (see `settle()`). False when
    /// the operation is not finishing, or `thread` is the one finishing it (the caller makes
    /// the announcement itself).
    mutating func handOver(_ later: @escaping @Sendable () -> Void, from thread: UInt64) -> Bool {
        switch phase {
        case .finishing, .announcing:
            guard extras?.finishingThread != thread else { return false }
            extras(orNew: ()).handedOverAnnouncements.append(later)
            return true
        default:
            return false
        }
    }

    /// Records `thread` as the one finishing the operation: announcements it makes
    /// meanwhile are made at once (see `handOver(_:from:)`).
    mutating func finishes(on thread: UInt64) {
        extras(orNew: ()).finishingThread = thread
    }

    /// Adds a waiter, made by `make` (with what the caller keeps of it), woken once the
    /// operation has finished; nil, and nothing made, when it already has.
    mutating func addFinishWaiter<Kept>(_ make: () -> (FinishWaiter, Kept)) -> Kept? {
        if case .finished = phase { return nil }
        let (waiter, kept) = make()
        finishWaiters.append(waiter)
        return kept
    }

    /// Takes off the hook `id` if it has not run; returns what it removed, for the caller
    /// to drop after the lock.
    mutating func removeFinishHook(_ id: UInt64) -> [FinishWaiter] {
        var removed: [FinishWaiter] = []
        finishWaiters.removeAll { waiter in
            guard case .hook(id, _, _) = waiter else { return false }
            removed.append(waiter)
            return true
        }
        return removed
    }

    /// The announcements handed over since the last call, to be made before any waiter is
    /// woken (see `handOver(_:from:)`).
    mutating func takeHandedOverAnnouncements() -> [@Sendable () -> Void] {
        guard let extras, !extras.handedOverAnnouncements.isEmpty else { return [] }
        defer { extras.handedOverAnnouncements = [] }
        return extras.handedOverAnnouncements
    }

    /// What completing hands over: the references the operation no longer needs, and the
    /// waiters to wake. The caller drops and wakes them after the lock.
    struct Completion {
        var waiters: [FinishWaiter]
        var hiddenDependencies: [Operation]
        /// What the layers above gave back (start hooks of an operation that finished
        /// without starting, never run), to release after the lock.
        var startHooks: [@Sendable () -> Void]
        /// The outcome for hooks; nil when no hook waits (threads need none).
        var outcome: Operation.Outcome?
        /// The operation is still announcing: observers or taps are to be told, or waiters
        /// woken, before it is finished (see ``settle()``).
        var settles: Bool
    }

    /// The finish has been processed (dependents released, completion block run). With
    /// nothing waiting and no observer to tell, the operation is finished now; otherwise
    /// once the observers were told and the waiters taken here woken (see ``settle()``): a
    /// wait that begins meanwhile joins them, so that no wait returns before the observers
    /// of `isFinished` were told and every hook registered earlier has run.
    mutating func complete(observersToTell: Bool) -> Completion {
        guard case .finishing = phase else {
            preconditionFailure("Operations: complete() in phase \(phase.kind); the finish is processed once, after finishing")
        }
        mustApply(.processed)
        // The taps' finish, told with the observers, before any waiter wakes.
        var tapsToTell = false
        var startHooks: [@Sendable () -> Void] = []
        if let layerState = extras?.layerState {
            (tapsToTell, startHooks) = layerState.operationFinished(with: outcome)
        }
        // Announcements handed over while the finish was processed are made while it is
        // announced (see `settle()`).
        let handedOver = extras.map { !$0.handedOverAnnouncements.isEmpty } ?? false
        let settles = !finishWaiters.isEmpty || observersToTell || tapsToTell || handedOver
        if !settles { mustApply(.complete) }
        let hooked = finishWaiters.contains { if case .hook = $0 { true } else { false } }
        // Taken from the side box in place (most operations have no box: one compare).
        let hidden = extras?.hiddenDependencies.takeAll() ?? []
        defer {
            finishWaiters = []
            queue = nil
        }
        return Completion(
            waiters: finishWaiters, hiddenDependencies: hidden, startHooks: startHooks,
            outcome: hooked ? outcome : nil, settles: settles)
    }

    /// What is left to do before the operation is finished: announcements handed over
    /// meanwhile, to make before waking anyone, or else the waiters that came meanwhile.
    struct Settling {
        var announcements: [@Sendable () -> Void] = []
        var waiters: [FinishWaiter] = []
        var outcome: Operation.Outcome?
    }

    /// The observers were told and the waiters woken by `complete(observersToTell:)` have
    /// run: what came meanwhile, to make or wake in turn, or nil when nothing did and the
    /// operation is finished now.
    mutating func settle() -> Settling? {
        guard case .announcing = phase else { return nil }
        let announcements = takeHandedOverAnnouncements()
        guard announcements.isEmpty else { return Settling(announcements: announcements) }
        guard !finishWaiters.isEmpty else {
            mustApply(.complete)
            return nil
        }
        let hooked = finishWaiters.contains { if case .hook = $0 { true } else { false } }
        defer { finishWaiters = [] }
        return Settling(waiters: finishWaiters, outcome: hooked ? outcome : nil)
    }

    /// The outcome, once the operation finished.
    var outcome: Operation.Outcome? {
        let kind: OutcomeKind
        switch phase {
        case .finishing(_, let finished), .announcing(let finished), .finished(let finished): kind = finished
        default: return nil
        }
        switch kind {
        case .succeeded: return .succeeded
        case .cancelled: return .cancelled(reason: extras?.cancellationReason)
        case .failed: return .failed(extras!.failure!)
        }
    }

    /// How an operation ended, without the errors (they are in `extras`).
    enum OutcomeKind: UInt8 {
        case succeeded, cancelled, failed

        var isCancelled: Bool { self == .cancelled }
    }
}

/// Whom a finish hook serves, as the wait graph reads it when it asks whether an operation
/// is still wanted (a blocked thread always wants it).
package enum FinishHookRole: Sendable {
    /// A caller awaits the operation's end: a task awaiting its value, a results loop.
    case caller
    /// An operation waits for this one (a group for a child, a retry for its attempt, a
    /// guarded operation for what its condition contributed): it wants it for as long as
    /// its own edges in the wait graph lead here.
    case operation(WeakOperationReference)
    /// The library keeps track of the end (a timeout's timer, an event stream):
    /// nobody waits for it.
    case bookkeeping
}

/// A reference to an operation that does not keep it alive.
package struct WeakOperationReference: @unchecked Sendable {
    // `@unchecked Sendable`: a weak reference is read and cleared atomically by the runtime.
    package weak var operation: Operation?

    package init(_ operation: Operation) {
        self.operation = operation
    }
}

/// Something waiting for an operation to finish: a blocked thread or a hook (a suspended
/// task's continuation, a group, a timer). Each is run once, after the completion block.
enum FinishWaiter {
    case thread(DispatchSemaphore)
    case hook(id: UInt64, FinishHookRole, @Sendable (Operation.Outcome) -> Void)

    func wake(_ outcome: Operation.Outcome?) {
        switch self {
        case .thread(let semaphore): semaphore.signal()
        case .hook(_, _, let hook): hook(outcome!)
        }
    }
}

extension OperationCore {
    /// The dependents a finish releases: the first inline, so that a chain or a fan-in
    /// allocates nothing for them; the others in an array of the right size.
    struct Dependents {
        private(set) var first: Operation?
        private(set) var others: [Operation] = []

        /// None.
        init() {}

        /// Strong references to the operations of `list` whose deinit has not begun; empties
        /// `list`. Call with the lock of the operation holding `list` held.
        init(taking list: inout [DependentReference]) {
            guard !list.isEmpty else { return }
            for reference in list {
                // The reference made here is the one kept (moved, not copied).
                guard let dependent = reference.retainedIfAlive() else { continue }
                if first == nil {
                    first = consume dependent
                } else {
                    if others.isEmpty { others.reserveCapacity(list.count - 1) }
                    others.append(consume dependent)
                }
            }
            list = []
        }

        /// Calls `body` with each, in the order they were added.
        func forEach(_ body: (Operation) -> Void) {
            guard let first else { return }
            body(first)
            if !others.isEmpty { for dependent in others { body(dependent) } }
        }
    }
}
