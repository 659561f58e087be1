/// Everything about an operation that changes after `init`, guarded by the operation's lock.
///
/// A pure state machine: its methods decide, and return what the caller must do once the
/// lock is released (call user code, notify a queue, wake a waiter).
///
/// Legal phase transitions (anything else is a programmer error or ignored):
///
/// | from       | event                          | to         |
/// |------------|--------------------------------|------------|
/// | idle       | added to a queue               | enqueued   |
/// | enqueued   | a queue worker claims it       | dispatched |
/// | idle, enqueued, dispatched | base `start()` runs `main()` | executing |
/// | any but finished | finished (base `start()` returns, cancelled start, or `isFinished` announced) | finished |
struct OperationCore {
    enum Phase: UInt8 {
        case idle, enqueued, dispatched, executing, finished
    }

    /// Where the operation is on its way into a queue's ready list.
    enum Readiness: UInt8 {
        /// Not ready as far as the engine knows (unfinished dependencies, or not enqueued).
        case waiting
        /// A thread is reading the (possibly overridden) `isReady` getter.
        case checking
        /// `isReady` read false; waiting for an `isReady` announcement.
        case parked
        /// In the queue's ready list.
        case delivered
    }

    var phase: Phase = .idle
    var readiness: Readiness = .waiting
    var isCancelled = false
    /// The finish was processed: dependents released, queue told, completion block taken.
    var isCompleted = false
    var startedByQueue = false
    var readinessGeneration: UInt32 = 0
    var pendingDependencyCount = 0
    var queuePriority: Operation.QueuePriority = .normal
    var qualityOfService: QualityOfService = .default
    var threadPriority = 0.5
    var name: String?
    var queue: OperationQueue?
    var completionBlock: (@Sendable () -> Void)?
    var dependencies: [Operation] = []
    /// The identities in `dependencies`, kept once the list is long, so that a fan-in of
    /// N operations costs O(N) rather than O(N²) to build.
    var dependencyIndex: Set<ObjectIdentifier>?
    /// Dependencies that `dependencies` does not list (barriers), until this finishes.
    var hiddenDependencies: [Operation] = []
    /// Operations that wait for this one, visible or hidden (barriers). Weak: a dependent
    /// nobody holds (never enqueued, abandoned) must be able to go away.
    var dependents: [WeakOperation] = []
    var waiters: [DispatchSemaphore] = []

    /// Ready as far as dependencies go: a cancelled operation ignores them.
    var isInternallyReady: Bool { isCancelled || pendingDependencyCount == 0 }

    /// Bits of the state the base getters report without the lock.
    enum VisibleFlags {
        static let executing: UInt8 = 1
        static let finished: UInt8 = 2
        static let cancelled: UInt8 = 4
        static let ready: UInt8 = 8
    }

    var visibleFlags: UInt8 {
        (phase == .executing ? VisibleFlags.executing : 0) | (phase == .finished ? VisibleFlags.finished : 0)
            | (isCancelled ? VisibleFlags.cancelled : 0) | (isInternallyReady ? VisibleFlags.ready : 0)
    }

    // MARK: Dependencies

    /// Lists `operation` as a dependency; false when it already is one.
    mutating func appendDependency(_ operation: Operation) -> Bool {
        let identity = ObjectIdentifier(operation)
        if let index = dependencyIndex {
            guard !index.contains(identity) else { return false }
        } else if dependencies.contains(where: { $0 === operation }) {
            return false
        }
        dependencies.append(operation)
        if dependencyIndex != nil {
            dependencyIndex!.insert(identity)
        } else if dependencies.count > 16 {
            dependencyIndex = Set(dependencies.lazy.map(ObjectIdentifier.init))
        }
        return true
    }

    /// Unlists `operation`; false when it was not a dependency.
    mutating func removeDependency(_ operation: Operation) -> Bool {
        guard let position = dependencies.firstIndex(where: { $0 === operation }) else { return false }
        dependencies.remove(at: position)
        dependencyIndex?.remove(ObjectIdentifier(operation))
        return true
    }

    // MARK: Admission

    /// Why this operation cannot join `queue`, or nil when it can.
    func refusal(toJoin queue: OperationQueue) -> QueueCore.Refusal? {
        if let owner = self.queue { return owner === queue ? .inThisQueue : .inAnotherQueue }
        switch phase {
        case .idle: return nil
        case .enqueued, .dispatched: return .inAnotherQueue
        case .executing: return .executing
        case .finished: return .finished
        }
    }

    // MARK: Readiness

    /// Something that may make the operation ready happened. Returns the generation to
    /// check `isReady` with, or nil when no check is needed now (not enqueued, not ready,
    /// already delivered, or a check under way that will notice the new generation).
    mutating func readinessTrigger() -> UInt32? {
        readinessGeneration &+= 1
        guard phase == .enqueued, isInternallyReady else { return nil }
        switch readiness {
        case .checking, .delivered:
            return nil
        case .waiting, .parked:
            readiness = .checking
            return readinessGeneration
        }
    }

    enum CheckOutcome {
        case deliver(OperationQueue?, Operation.QueuePriority)
        case done
        case retry(UInt32)
    }

    /// The `isReady` getter read `isReady` for `generation`.
    mutating func readinessChecked(generation: UInt32, isReady: Bool) -> CheckOutcome {
        guard readiness == .checking else { return .done }
        if generation != readinessGeneration {
            guard phase == .enqueued, isInternallyReady else {
                readiness = .waiting
                return .done
            }
            return .retry(readinessGeneration)
        }
        readiness = isReady ? .delivered : .parked
        return isReady ? .deliver(queue, queuePriority) : .done
    }

    /// A queue worker popped the operation from the ready list. False when it must be
    /// skipped: it finished or was started by hand meanwhile, or gained a dependency.
    mutating func claimForQueue() -> Bool {
        guard phase == .enqueued else { return false }
        guard isInternallyReady else {
            readiness = .waiting
            return false
        }
        phase = .dispatched
        startedByQueue = true
        return true
    }

    /// The claiming worker found `isReady` false: back to waiting for an announcement,
    /// unless one arrived since `generation` was read.
    mutating func unclaim(generation: UInt32) -> Bool {
        guard phase == .dispatched, readinessGeneration == generation else { return false }
        phase = .enqueued
        startedByQueue = false
        readiness = .parked
        return true
    }

    // MARK: Start

    enum StartAction {
        case run, finishCancelled, ignore, misuseExecuting, misuseNotReady
    }

    /// `start()` was called. `reportedReady` is what the `isReady` getter said, read
    /// before the lock for a start by hand; nil for a start by a queue.
    mutating func start(reportedReady: Bool?) -> StartAction {
        switch phase {
        case .finished:
            return .ignore
        case .executing:
            return .misuseExecuting
        case .idle, .enqueued, .dispatched:
            if isCancelled { return .finishCancelled }
            if phase != .dispatched, !(reportedReady ?? isInternallyReady) { return .misuseNotReady }
            phase = .executing
            return .run
        }
    }

    // MARK: Finish

    struct Completion {
        var dependents: [WeakOperation]
        var completionBlock: (@Sendable () -> Void)?
        var queue: OperationQueue?
        var startedByQueue: Bool
        var waiters: [DispatchSemaphore]
    }

    /// The operation finished. Returns the work to do once, or nil the second time.
    mutating func complete() -> Completion? {
        guard !isCompleted else { return nil }
        isCompleted = true
        phase = .finished
        defer {
            dependents = []
            hiddenDependencies = []
            completionBlock = nil
            queue = nil
            waiters = []
        }
        return Completion(
            dependents: dependents, completionBlock: completionBlock, queue: queue,
            startedByQueue: startedByQueue, waiters: waiters)
    }
}

/// A weak reference to an operation, for the dependents list.
struct WeakOperation {
    weak var operation: Operation?
}
