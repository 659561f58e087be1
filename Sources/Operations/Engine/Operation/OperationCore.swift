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
    /// The band its queue chose when the operation was added (see `OperationCore.join`).
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

    /// Dependencies that `dependencies` does not list (barriers), not finished yet.
    var hiddenDependencies: [Operation] { extras?.hiddenDependencies.all ?? [] }

    /// Whether it has hidden dependencies not finished yet.
    var hasHiddenDependencies: Bool { mutating get { extras.map { !$0.hiddenDependencies.isEmpty } ?? false } }

    /// Ready as far as dependencies go: a cancelled operation ignores them.
    var isInternallyReady: Bool { mutating get { cancellation.isCancelled || pendingDependencyCount == 0 } }

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
    ///
    /// Called on the state in place (`inout`): an unoptimized build would copy the whole
    /// state, retaining every reference in it, to call a getter, at every change.
    static func visibleFlags(of state: inout OperationCore) -> UInt8 {
        var flags: UInt8 = state.cancellation.isCancelled || state.pendingDependencyCount == 0 ? VisibleFlags.ready : 0
        // Any side box counts (it may hold hidden dependencies): two compares, on every change.
        if state.dependencies.count != 0 || state.extras != nil { flags |= VisibleFlags.holdsDependencies }
        if state.cancellation.isCancelled { flags |= VisibleFlags.cancelled }
        if let extras = state.extras {
            if extras.layerState != nil { flags |= VisibleFlags.attachments }
            if extras.gates != nil { flags |= VisibleFlags.gated }
        }
        switch state.phase {
        case .executing: flags |= VisibleFlags.executing
        case .announcingBaseFinish, .awaitingFinish: flags |= VisibleFlags.finished
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

// MARK: - Priorities

extension OperationCore {
    /// Sets the queue priority; returns the queue whose ready list must refile the
    /// operation (it is filed there, and the band it runs in changed), or nil.
    mutating func setQueuePriority(_ priority: Operation.QueuePriority) -> OperationQueue? {
        let before = effectivePriority
        queuePriority = priority
        return phase.kind == .ready && effectivePriority != before ? queue : nil
    }

    mutating func setQualityOfService(_ quality: QualityOfService) {
        qualityOfService = quality
    }
}

// MARK: - Dependencies

extension OperationCore {
    /// Lists `operation` as a dependency; false when it already is one. `knownNew`: the
    /// caller knows it is not one (see `surelyDoesNotList(_:dependentPhase:)`), which spares
    /// a long list its search and its index.
    mutating func appendDependency(_ operation: Operation, knownNew: Bool = false) -> Bool {
        if let extras, extras.dependencyIndex != nil {
            guard extras.dependencyIndex!.insert(ObjectIdentifier(operation)).inserted else { return false }
        } else if !knownNew {
            if dependencies.contains(where: { $0 === operation }) { return false }
            if dependencies.count >= Self.shortList {
                var index = Set(dependencies.lazy.map(ObjectIdentifier.init))
                index.insert(ObjectIdentifier(operation))
                extras(orNew: ()).dependencyIndex = index
            }
        }
        dependencies.appendGrowingFromFour(operation)
        return true
    }

    /// Whether this operation, as a dependency, surely does not have the operation at
    /// `dependent` (in phase `dependentPhase`) as a dependency yet. While both are
    /// unfinished, a dependency lists every operation waiting for it, so when that list is
    /// short (a fan-in: a sink with many sources, each with one dependent) it answers instead
    /// of the dependent's long list. False (not sure) otherwise, and when it is listed (by
    /// the edge, or by a barrier's hidden one).
    func surelyDoesNotList(_ dependent: UnsafeMutableRawPointer, dependentPhase: Phase) -> Bool {
        !phase.isFinishingOrFinished && !dependentPhase.isFinishingOrFinished
            && dependents.count < Self.shortList && !dependents.contains { $0.refers(to: dependent) }
    }

    /// The length up to which a dependency or dependents list is searched from end to end.
    static let shortList = 16

    /// Unlists `operation`; returns the reference the list held (for the caller to drop
    /// after the lock), or nil when it was not a dependency.
    mutating func removeDependency(_ operation: Operation) -> Operation? {
        guard let position = dependencies.firstIndex(where: { $0 === operation }) else { return nil }
        extras?.dependencyIndex?.remove(ObjectIdentifier(operation))
        return dependencies.remove(at: position)
    }

    /// Lists a barrier as a hidden dependency (``Operation/dependencies`` does not show it).
    mutating func appendHiddenDependency(_ operation: Operation) {
        extras(orNew: ()).hiddenDependencies.append(operation)
    }

    /// A dependency finished: off the hidden list, if it is a barrier this one waits for (or
    /// a member a barrier waits for). Returns the reference the list held, for the caller to
    /// drop after the lock.
    mutating func hiddenDependencyFinished(_ dependency: ObjectIdentifier) -> Operation? {
        guard let extras, !extras.hiddenDependencies.isEmpty else { return nil }
        return extras.hiddenDependencies.remove(dependency)
    }

    /// Gives up both dependency lists (the operation is going away): the caller drops them
    /// after the lock.
    mutating func takeDependencies() -> (visible: [Operation], hidden: [Operation]) {
        let hidden = extras?.hiddenDependencies.takeAll() ?? []
        defer { dependencies = [] }
        return (dependencies, hidden)
    }

    /// Lists an operation that waits for this one.
    mutating func addDependent(_ dependent: DependentReference) {
        dependents.appendGrowingFromFour(dependent)
    }

    /// Unlists one edge to the dependent at `address`; false when it was not listed (this
    /// operation's finish already released it).
    mutating func removeDependent(at address: UnsafeMutableRawPointer) -> Bool {
        guard let index = dependents.firstIndex(where: { $0.refers(to: address) }) else { return false }
        dependents.remove(at: index)
        return true
    }

    /// Unlists every edge to the dependent at `address` (it is going away).
    mutating func removeDependentEverywhere(at address: UnsafeMutableRawPointer) {
        dependents.removeAll { $0.refers(to: address) }
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

    /// What the caller does after a dependency counted itself out
    /// (`loseDependencyTriggeringReadiness()`).
    enum LossFollowUp {
        /// The operation has gates: they are consulted before its readiness is checked.
        case consultGates
        /// What `readinessTrigger()` returned: the generation of a check to run, or nil.
        case check(UInt32?)
    }

    /// A dependency finished (and nothing observes `isReady`): `loseDependency()`, then, in
    /// the same section, `readinessTrigger()` unless the operation has gates. Decided here,
    /// under the lock, so that gates added on another thread before this section (the
    /// operation queued since) are consulted.
    mutating func loseDependencyTriggeringReadiness() -> LossFollowUp {
        loseDependency()
        if extras?.gates != nil { return .consultGates }
        return .check(readinessTrigger())
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
    var hiddenDependencies = HiddenDependencies()
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
/// its barriers' lists (`_completeFinish`); a dependency's finish takes its list. Each read
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
