internal import COperationsRuntime
import Synchronization

/// Everything about an operation that changes after `init`, guarded by the operation's lock.
///
/// A pure state machine: its methods decide, and return what the caller must do once the
/// lock is released (call user code, notify a queue, wake a waiter, drop references).
/// Nothing that could run user code happens here: references the state gives up are
/// handed back to the caller, so that a `deinit` never runs under the lock.
///
/// The life of an operation is one value, ``Phase``; every change of it goes through
/// ``Phase/after(_:)``, the transition table. Cancellation is the one other dimension
/// (``Cancellation``): it can be requested in any phase before finishing, never after.
///
/// Every byte here is in every operation (pending memory is a target), so the fields are
/// ordered to pack (the 4-byte counters first, then the 1-byte ones), and what most
/// operations never set (name, thread priority, completion block, barriers, errors, the
/// index of a long dependency list) lives in a side box, ``OperationExtras``, made on
/// first use.
struct OperationCore {
    /// Bumped by everything that may change readiness, so that a readiness check that read
    /// `isReady` before a change can tell that it must read it again.
    var readinessGeneration: UInt32 = 0
    /// Unfinished dependencies (32 bits: each is an operation, far fewer than 2³² of them).
    var pendingDependencyCount: Int32 = 0
    var phase: Phase = .idle
    var cancellation: Cancellation = .none
    /// Nil until set: then the queue files the operation under `bandWhenAdded`.
    var queuePriority: Operation.QueuePriority?
    /// The band its queue chose when the operation was added (see `QueueCore.admit`).
    var bandWhenAdded: Operation.QueuePriority = .normal
    /// Nil until set (the getter reports `.default`).
    var qualityOfService: QualityOfService?
    /// Raised by priority escalation (an awaiting task or a dependent of higher quality of
    /// service): the operation runs, and is filed, at least at this level. Never lowered.
    var escalatedQuality: QualityOfService?
    /// The queue the operation was added to, until it finished.
    var queue: OperationQueue?
    var dependencies: [Operation] = []
    /// Operations that wait for this one, visible or hidden (barriers). Unretained: a
    /// dependent nobody holds (never enqueued, abandoned) must be able to go away; it takes
    /// itself off this list first (see `DependentReference`).
    var dependents: [DependentReference] = []
    /// Run once when the operation has finished (after its completion block).
    var finishWaiters: [FinishWaiter] = []
    /// What few operations use, boxed (see ``OperationExtras``): nil until first set.
    /// A class, so that a phase without payloads that need releasing keeps every
    /// transition a plain store. Kept until the operation goes away (never dropped under
    /// the lock).
    var extras: OperationExtras?

    mutating func extras(orNew: Void) -> OperationExtras {
        extras.madeOnFirstUse(OperationExtras.init)
    }

    /// The error a layer above reported before finishing (an async body that threw).
    var failure: (any Error)? {
        get { extras?.failure }
        set { extras(orNew: ()).failure = newValue }
    }

    /// The reason `cancel(with:)` passes to `cancel()` (which subclasses may override).
    var offeredCancellationReason: (any Error)? {
        get { extras?.offeredCancellationReason }
        set { extras(orNew: ()).offeredCancellationReason = newValue }
    }

    var name: String? {
        get { extras?.name }
        set {
            guard newValue != nil || extras != nil else { return }
            extras(orNew: ()).name = newValue
        }
    }

    var threadPriority: Double {
        get { extras?.threadPriority ?? 0.5 }
        set { extras(orNew: ()).threadPriority = newValue }
    }

    /// In the side box: 16 bytes that most operations never use, and what brings a
    /// BlockOperation to 176 bytes (a box costs one allocation when a block is set).
    var completionBlock: (@Sendable () -> Void)? {
        get { extras?.completionBlock }
        set {
            guard newValue != nil || extras != nil else { return }
            extras(orNew: ()).completionBlock = newValue
        }
    }

    /// Dependencies that `dependencies` does not list (barriers), until this finishes.
    var hiddenDependencies: [Operation] {
        get { extras?.hiddenDependencies ?? [] }
        set {
            guard !newValue.isEmpty || extras != nil else { return }
            extras(orNew: ()).hiddenDependencies = newValue
        }
        // In place: a barrier appends one per earlier operation.
        _modify { yield &extras(orNew: ()).hiddenDependencies }
    }

    /// Ready as far as dependencies go: a cancelled operation ignores them.
    var isInternallyReady: Bool { cancellation.isCancelled || pendingDependencyCount == 0 }

    /// The priority the ready list files the operation under: `queuePriority` when set,
    /// else the band chosen when it was added.
    var effectivePriority: Operation.QueuePriority {
        let base = queuePriority ?? bandWhenAdded
        // An escalation raises the band, on serial queues too: someone waits for it.
        guard let escalatedQuality else { return base }
        let raised = Operation.QueuePriority(band: escalatedQuality)
        return raised.rawValue > base.rawValue ? raised : base
    }

    /// The quality of service the operation runs at (before its queue's floor): its own,
    /// raised by an escalation. Nil when neither was set.
    var threadQuality: QualityOfService? {
        guard let escalatedQuality else { return qualityOfService }
        guard let qualityOfService else { return escalatedQuality }
        return escalatedQuality.rank > qualityOfService.rank ? escalatedQuality : qualityOfService
    }

    /// Bits of the state the base getters report without the lock.
    enum VisibleFlags {
        static let executing: UInt8 = 1
        static let finished: UInt8 = 2
        static let cancelled: UInt8 = 4
        static let ready: UInt8 = 8
        /// Not reported by a getter: the state lists dependencies (visible or hidden), which
        /// `deinit` must hand to the release pool. Without it, `deinit` takes no lock.
        static let holdsDependencies: UInt8 = 16
        /// A layer above keeps state with the operation (`OperationLayerState`): `start()`
        /// and queues look there (start hooks, lifecycle taps).
        static let attachments: UInt8 = 32
        /// Not reported by a getter: the engine processes or has processed the finish
        /// (`finished` also covers a base state that says finished while a subclass's
        /// `isFinished` does not yet).
        static let done: UInt8 = 64
        /// Not reported by a getter: the operation has gates (see `GateState`).
        static let gated: UInt8 = 128
    }

    /// Inlined: computed at every change of the state, under the lock.
    @inline(__always)
    var visibleFlags: UInt8 {
        var flags: UInt8 = isInternallyReady ? VisibleFlags.ready : 0
        // Any side box counts (it may hold hidden dependencies): two compares, on every change.
        if !dependencies.isEmpty || extras != nil { flags |= VisibleFlags.holdsDependencies }
        if cancellation.isCancelled { flags |= VisibleFlags.cancelled }
        if let extras {
            if extras.layerState != nil { flags |= VisibleFlags.attachments }
            if extras.gates != nil { flags |= VisibleFlags.gated }
        }
        switch phase {
        case .executing: flags |= VisibleFlags.executing
        case .awaitingFinish: flags |= VisibleFlags.finished
        case .finishing, .announcing, .finished: flags |= VisibleFlags.finished | VisibleFlags.done
        default: break
        }
        return flags
    }

    /// Applies `event` to the phase; false (and nothing changes) when the table refuses it.
    mutating func apply(_ event: Phase.Event) -> Bool {
        guard let next = phase.after(event) else { return false }
        phase = next
        return true
    }

    /// Applies `event`, which the caller knows the table accepts here; a refusal is a bug
    /// in the engine and stops with the phase and the event.
    mutating func mustApply(_ event: Phase.Event) {
        guard let next = phase.after(event) else {
            preconditionFailure("Operations: event \(event) refused in phase \(phase.kind)")
        }
        phase = next
    }
}

// MARK: - Dependencies

extension OperationCore {
    /// Lists `operation` as a dependency; false when it already is one.
    mutating func appendDependency(_ operation: Operation) -> Bool {
        let identity = ObjectIdentifier(operation)
        if let extras, extras.dependencyIndex != nil {
            guard extras.dependencyIndex!.insert(identity).inserted else { return false }
            dependencies.appendGrowingFromFour(operation)
            return true
        }
        if dependencies.contains(where: { $0 === operation }) { return false }
        dependencies.appendGrowingFromFour(operation)
        if dependencies.count > 16 {
            extras(orNew: ()).dependencyIndex = Set(dependencies.lazy.map(ObjectIdentifier.init))
        }
        return true
    }

    /// Unlists `operation`; returns the reference the list held (for the caller to drop
    /// after the lock), or nil when it was not a dependency.
    mutating func removeDependency(_ operation: Operation) -> Operation? {
        guard let position = dependencies.firstIndex(where: { $0 === operation }) else { return nil }
        extras?.dependencyIndex?.remove(ObjectIdentifier(operation))
        return dependencies.remove(at: position)
    }

    /// One more unfinished dependency.
    /// (An operation already in the ready list stays there: the worker that pops it finds
    /// it not ready and lets it wait again.)
    mutating func gainDependency() {
        pendingDependencyCount += 1
        readinessGeneration &+= 1
    }

    /// One dependency fewer.
    mutating func loseDependency() {
        pendingDependencyCount -= 1
        readinessGeneration &+= 1
    }
}

// MARK: - Admission

extension OperationCore {
    /// Why this operation cannot join `queue`, or nil when it can. `reportedExecuting`
    /// and `reportedFinished` are what the (possibly overridden) getters said.
    func refusal(toJoin queue: OperationQueue, reportedExecuting: Bool, reportedFinished: Bool) -> QueueCore.Refusal? {
        if let owner = self.queue { return owner === queue ? .inThisQueue : .inAnotherQueue(owner) }
        switch phase {
        case .idle:
            if reportedFinished { return .finished }
            if reportedExecuting { return .executing }
            return nil
        case .waiting, .checking, .parked, .ready, .dispatched: return .inAnotherQueue(nil)
        case .executing, .awaitingFinish: return .executing
        case .finishing, .announcing, .finished: return .finished
        }
    }

    /// What a queue gives an operation joining it (`QueueCore.joinTerms`).
    struct JoinTerms {
        /// The queue's quality of service, when the operation takes it.
        var quality: QualityOfService?
        /// A serial queue: the band is `.normal`, not chosen by the quality of service.
        var serial: Bool
    }

    enum Joining {
        case refused(QueueCore.Refusal)
        /// Joined; `readyIn` is the band to file it in when it is ready now (nil: it waits).
        case joined(readyIn: Operation.QueuePriority?)
    }

    /// Joins `queue`, or says why it cannot, changing nothing. Waits for a barrier
    /// (`waitsForBarrier`: its count raised here, the edge registered by the caller after
    /// the locks) and, when `held`, for a dependency the caller releases itself. Ready now
    /// when it was ready and nothing changed since `reading` was taken.
    ///
    /// The band of an operation whose `queuePriority` is not set is fixed here, as on
    /// Linux's Foundation: from its quality of service now, `.normal` if the queue is
    /// serial now; neither a later change of the queue's limit nor of the operation's
    /// quality of service moves it (setting `queuePriority` does).
    mutating func join(
        _ queue: OperationQueue, terms: JoinTerms, waitsForBarrier: Bool, held: Bool, reading: QueueCore.Reading
    ) -> Joining {
        if let refusal = refusal(toJoin: queue, reportedExecuting: reading.isExecuting, reportedFinished: reading.isFinished) {
            return .refused(refusal)
        }
        mustApply(.enqueue)
        self.queue = queue
        if waitsForBarrier { gainDependency() }
        if held { gainDependency() }
        if let quality = terms.quality { qualityOfService = quality }
        bandWhenAdded = terms.serial ? .normal : Operation.QueuePriority(band: qualityOfService ?? .default)
        guard reading.isReady, reading.generation == readinessGeneration, isInternallyReady else {
            return .joined(readyIn: nil)
        }
        mustApply(.beginCheck)
        mustApply(.confirmReady)
        return .joined(readyIn: effectivePriority)
    }

    /// Undoes `join` for an operation of a batch that is being refused.
    mutating func unjoin(waitedForBarrier: Bool) {
        mustApply(.withdraw)
        queue = nil
        if waitedForBarrier { loseDependency() }
    }
}

// MARK: - Readiness

extension OperationCore {
    /// Something that may make the operation ready happened. Returns the generation to
    /// check `isReady` with, or nil when no check is needed now (not in a queue, not ready
    /// as far as dependencies go, already in the ready list, or a check under way that will
    /// notice the new generation).
    mutating func readinessTrigger() -> UInt32? {
        readinessGeneration &+= 1
        guard isInternallyReady, apply(.beginCheck) else { return nil }
        return readinessGeneration
    }

    enum CheckOutcome {
        case deliver(OperationQueue, Operation.QueuePriority)
        case done
        case retry(UInt32)
    }

    /// The readiness check read `isReady` for `generation`.
    mutating func readinessChecked(generation: UInt32, isReady: Bool) -> CheckOutcome {
        guard case .checking = phase else { return .done }
        if generation != readinessGeneration {
            guard isInternallyReady else {
                mustApply(.loseReadiness)
                return .done
            }
            return .retry(readinessGeneration)
        }
        guard isReady, let queue else {
            mustApply(.denyReady)
            return .done
        }
        mustApply(.confirmReady)
        return .deliver(queue, effectivePriority)
    }

    /// A queue worker popped the operation from the ready list. False when it must be
    /// skipped: it finished or was started by hand meanwhile, or gained a dependency (then
    /// it waits again; the dependency's finish re-checks it).
    mutating func claimForQueue() -> Bool {
        guard isInternallyReady else {
            // It gained a dependency while in the ready list: it waits again (the
            // dependency's finish checks it again). Unless it was started or finished by hand
            // meanwhile, and given the dependency after that: the table refuses the event
            // then, and the operation, no longer the queue's to start, is only skipped.
            if phase.isQueuedNotClaimed { mustApply(.loseReadiness) }
            return false
        }
        return apply(.claim)
    }

    enum Unclaim {
        /// Given back: it waits for its next `isReady` announcement.
        case parked
        /// An announcement arrived since the worker read `isReady`: read it again.
        case readAgain
        /// Cancelled meanwhile: a cancelled operation ignores readiness; start it.
        case start
        /// It finished meanwhile (its finish frees the slot): nothing to start.
        case skip
    }

    /// The claiming worker found `isReady` false: back to waiting for an announcement,
    /// unless something changed since `generation` was read.
    mutating func unclaim(generation: UInt32) -> Unclaim {
        guard case .dispatched = phase else { return .skip }
        if cancellation.isCancelled { return .start }
        guard readinessGeneration == generation else { return .readAgain }
        return apply(.unclaim) ? .parked : .skip
    }
}

/// What few operations use, out of line so that the others do not pay for it: the errors
/// of the outcome (a reported failure, a cancellation reason, and the reason
/// `cancel(with:)` offered before `cancel()` took it), the name, the thread priority, the
/// completion block, barrier dependencies, and the index of a long dependency list.
/// - Note: `@unchecked Sendable`: only reached through `OperationCore`, under the
///   operation's lock.
final class OperationExtras: @unchecked Sendable {
    var failure: (any Error)?
    var offeredCancellationReason: (any Error)?
    var cancellationReason: (any Error)?
    var name: String?
    var threadPriority = 0.5
    var completionBlock: (@Sendable () -> Void)?
    /// See `OperationCore.hiddenDependencies`.
    var hiddenDependencies: [Operation] = []
    /// The identities in `dependencies`, kept once the list is long, so that a fan-in of
    /// N operations costs O(N) rather than O(N²) to build.
    var dependencyIndex: Set<ObjectIdentifier>?
    /// What the layers above keep with the operation (see `OperationLayerState`).
    var layerState: (any OperationLayerState)?
    /// The operation's gates (see `GateState`).
    var gates: GateState?
    /// Announcements of its finish made on other threads while the finish was processed
    /// or announced (see `OperationCore.handOver(_:from:)`).
    var handedOverAnnouncements: [@Sendable () -> Void] = []
    /// The thread processing and announcing the finish, recorded when the operation was
    /// observed as it finished: its own announcements are never handed over.
    var finishingThread: UInt64?
}

extension Array {
    /// Appends; the first append makes room for four. Dependency and dependent lists grow
    /// one edge at a time, and each of the first doublings (1, 2, 4) would reallocate: a
    /// layer of 16 edges costs three allocations instead of five.
    mutating func appendGrowingFromFour(_ element: Element) {
        if capacity == 0 { reserveCapacity(4) }
        append(element)
    }
}

/// An unretained reference to an operation waiting for another, for the dependents list.
///
/// Not `weak`: a weak reference gives its object a side table, and every retain and release
/// of an operation with one takes the runtime's slow path (about a third of the cost of a
/// graph with many edges). Instead, an operation is on a dependents list only while it is
/// alive: one that goes away while it waits takes itself off the lists of the dependencies
/// that have not finished (`Operation.deinit`), and one that finishes first takes itself off
/// its barriers' lists (`_processFinish`); a dependency's finish takes its list. Each read
/// happens under the dependency's lock, where the referenced operation is still allocated;
/// `retainedIfAlive()` makes a strong reference there unless the operation's deinit has
/// begun (it is then waiting for that lock to take itself off, and is skipped).
struct DependentReference {
    private let pointer: Unmanaged<Operation>

    init(_ operation: Operation) {
        pointer = Unmanaged.passUnretained(operation)
    }

    /// A strong reference, unless the operation's deinit has begun. Call with the lock of the
    /// list holding this reference held.
    func retainedIfAlive() -> Operation? {
        guard operations_try_retain(pointer.toOpaque()) else { return nil }
        return pointer.takeRetainedValue()
    }

    /// Strong references to those of `list` whose deinit has not begun. Call with the lock
    /// of the operation holding `list` held.
    static func retainedIfAlive(_ list: [DependentReference]) -> [Operation] {
        list.compactMap { $0.retainedIfAlive() }
    }

    /// Whether this refers to `operation` (no reference is made).
    func refers(to operation: UnsafeMutableRawPointer) -> Bool {
        pointer.toOpaque() == operation
    }
}

extension Operation.QueuePriority {
    /// The band a quality of service chooses (Linux's Foundation does the same).
    init(band quality: QualityOfService) {
        switch quality {
        case .userInteractive: self = .veryHigh
        case .userInitiated: self = .high
        case .utility: self = .low
        case .background: self = .veryLow
        default: self = .normal
        }
    }
}
