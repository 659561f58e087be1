// Who waits for what: the one graph that priority escalation, stall and deadlock reports
// and upstream cancellation read.

/// One edge of the wait graph: what an operation cannot start or finish without.
package struct WaitEdge {
    /// What makes the operation wait.
    package enum Kind: Sendable, Equatable {
        /// A dependency (`addDependency(_:)`).
        case dependency
        /// A barrier added to its queue before it.
        case barrier
        /// A child of a group, which finishes after it.
        case child
        /// A retry's running attempt.
        case attempt
        /// An operation a condition contributed (a "sign in").
        case contributed
        /// An operation holding something the operation needs (an exclusivity category).
        case holder
        /// A wait inside the running operation's work, blocking or `await`.
        case blockedWait
        /// The operation that owns its queue and holds it until it starts (a group's
        /// children wait for the group).
        case owner
        /// A slot of its queue: any of the operations holding one.
        case slot
    }

    /// What makes the operation wait.
    package let kind: Kind
    /// What it waits for.
    package let targets: [Operation]
    /// The edge ends when any one target ends (a slot: whichever holder ends frees it);
    /// otherwise only when each one does.
    package var isAnyOf: Bool { kind == .slot }
    /// The edge does not hold the operation up yet: a group's children before the group
    /// has opened their queue (the group waits to start, not for them). Escalation and
    /// upstream cancellation follow it; the stall analysis does not.
    package let isDormant: Bool

    package init(_ kind: Kind, _ targets: [Operation], isDormant: Bool = false) {
        self.kind = kind
        self.targets = targets
        self.isDormant = isDormant
    }
}

/// Something that makes operations wait for others beyond their dependencies, and says so:
/// an operation subclass (a group waits for its children, a retry for its attempt), a gate
/// (a condition for what it contributed, a category for its holder), a queue that belongs
/// to an operation (its operations wait for their owner to start).
///
/// A layer that adds a kind of wait conforms and is read by every feature that follows
/// waits; nothing else lists edges.
package protocol WaitGraphSource: AnyObject {
    /// What `operation` waits for through this source now, unfinished operations only.
    /// Called with no lock of the library held.
    func waitEdges(of operation: Operation) -> [WaitEdge]

    /// Whether `operation` waits for `target` through this source now: the same answer as
    /// `waitEdges(of:)`, which a source with many edges gives without listing them (a
    /// group asked about one child).
    func waits(_ operation: Operation, for target: Operation) -> Bool
}

extension WaitGraphSource {
    package func waits(_ operation: Operation, for target: Operation) -> Bool {
        waitEdges(of: operation).contains { edge in edge.targets.contains { $0 === target } }
    }
}

/// The wait graph, read on demand: an operation's edges are gathered from the engine's state
/// and the sources when asked, so that an operation nobody escalates, waits for or diagnoses
/// pays nothing for it.
package enum WaitGraph {
    /// Whether `edges(of:)` should include the any-of edge to the slot holders of a full queue
    /// (the stall analysis does, with the holders it looked up; escalation and upstream
    /// cancellation do not).
    package enum Slots {
        case included(SlotHolders)
        case excluded
    }

    /// The operations holding each queue's slots, looked up once per queue by one reader of
    /// the graph (a queue of many ready operations is listed once, not once for each).
    package final class SlotHolders {
        private var byQueue: [ObjectIdentifier: [Operation]] = [:]

        package init() {}

        /// The operations holding a slot of `queue` (claimed, executing, or waiting for an
        /// asynchronous finish).
        func of(_ queue: OperationQueue) -> [Operation] {
            if let known = byQueue[ObjectIdentifier(queue)] { return known }
            let members = queue._members
            let holders = members.filter { member in
                member._readState { state in
                    guard state.queue === queue else { return false }
                    switch state.phase.kind {
                    case .dispatched, .executing, .announcingBaseFinish, .awaitingFinish: return true
                    default: return false
                    }
                }
            }
            byQueue[ObjectIdentifier(queue)] = holders
            return holders
        }
    }

    /// Everything `operation` waits for now: its unfinished dependencies (unless it is
    /// cancelled: a cancelled operation ignores them), the barriers before it, what its gates,
    /// its queue's owner and its own class declare, the waits its running work is blocked in,
    /// and, when asked, the slot holders of its full queue.
    package static func edges(of operation: Operation, slots: Slots = .excluded) -> [WaitEdge] {
        let snapshot = operation._readState { state in
            (phase: state.phase.kind, cancelled: state.cancellation.isCancelled, queue: state.queue,
             dependencies: state.dependencies, barriers: state.hiddenDependencies)
        }
        var edges: [WaitEdge] = []
        switch snapshot.phase {
        case .finishing, .announcing, .finished:
            return []
        case .idle, .waiting, .checking, .parked, .ready:
            if !snapshot.cancelled {
                let pending = snapshot.dependencies.filter { !$0._isFinishingFlag }
                if !pending.isEmpty { edges.append(WaitEdge(.dependency, pending)) }
            }
            let barriers = snapshot.barriers.filter { !$0._isFinishingFlag }
            if !barriers.isEmpty { edges.append(WaitEdge(.barrier, barriers)) }
            if let queue = snapshot.queue, case .included(let holders) = slots, snapshot.phase == .ready,
                let slot = slotEdge(in: queue, holders: holders)
            {
                edges.append(slot)
            }
        case .dispatched, .executing, .announcingBaseFinish, .awaitingFinish:
            if let targets = BlockedWaits.targets(of: operation) {
                let pending = targets.filter { !$0._isFinishingFlag }
                if !pending.isEmpty { edges.append(WaitEdge(.blockedWait, pending)) }
            }
        }
        for source in sources(of: operation, phase: snapshot.phase, cancelled: snapshot.cancelled, queue: snapshot.queue) {
            edges += source.waitEdges(of: operation)
        }
        return edges
    }

    /// The sources that declare what `operation` waits for in `phase`: its gates while it
    /// waits to start and is not cancelled (a cancelled operation passes them), its queue
    /// while it waits to start (a queue held for its owner), and its own class. The one
    /// list both `edges(of:)` and `waits(_:for:isDependency:)` ask.
    private static func sources(
        of operation: Operation, phase: OperationCore.Phase.Kind, cancelled: Bool, queue: OperationQueue?
    ) -> [any WaitGraphSource] {
        var sources: [any WaitGraphSource] = []
        switch phase {
        case .idle, .waiting, .checking, .parked, .ready:
            if !cancelled { sources += operation._gates.compactMap { $0 as? any WaitGraphSource } }
            if let source = queue as? any WaitGraphSource { sources.append(source) }
        case .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished:
            break
        }
        if let source = operation as? any WaitGraphSource { sources.append(source) }
        return sources
    }

    /// Whether `operation` waits for `target` now, over every edge but slots: what
    /// `targets(of:)` would say, asked of one edge at a time, so that the answer costs no
    /// more than the edges that lead there (a group asked about one of thousands of
    /// children reads one). `isDependency`: `target` is known to be a dependency or barrier
    /// of `operation` (a dependents list said so).
    package static func waits(_ operation: Operation, for target: Operation, isDependency: Bool) -> Bool {
        guard !target._isFinishingFlag else { return false }
        let (phase, cancelled, queue) = operation._readState { ($0.phase.kind, $0.cancellation.isCancelled, $0.queue) }
        switch phase {
        case .finishing, .announcing, .finished:
            return false
        case .idle, .waiting, .checking, .parked, .ready:
            // A dependency holds it up unless it is cancelled; a barrier even then.
            if isDependency, !cancelled || operation._readState({ state in state.hiddenDependencies.contains { $0 === target } }) {
                return true
            }
        case .dispatched, .executing, .announcingBaseFinish, .awaitingFinish:
            if BlockedWaits.targets(of: operation)?.contains(where: { $0 === target }) == true { return true }
        }
        return sources(of: operation, phase: phase, cancelled: cancelled, queue: queue).contains { $0.waits(operation, for: target) }
    }

    /// The operations `operation` waits for, over every edge but slots, each once.
    package static func targets(of operation: Operation) -> [Operation] {
        var seen = Set<ObjectIdentifier>()
        return edges(of: operation).flatMap(\.targets).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// A full queue's slot holders, any of which frees a slot when it ends (each progresses
    /// or not by its own edges: a wait inside its work, a group's children); nil when the
    /// queue has room.
    private static func slotEdge(in queue: OperationQueue, holders: SlotHolders) -> WaitEdge? {
        let state = queue._snapshot
        let (limit, executing) = (state.limit.executions, state.executing)
        guard limit > 0, executing >= limit else { return nil }
        let holding = holders.of(queue)
        return holding.isEmpty ? nil : WaitEdge(.slot, holding)
    }
}

extension WaitGraph {
    /// Whether anyone still wants `operation` to finish, so that cancelling it would lose
    /// something: a thread blocked on it, a caller awaiting it, or an operation that is
    /// neither cancelled nor finished and waits for it (a dependent, a pending barrier, a group
    /// for its child, a retry for its attempt, a guarded operation for what its condition
    /// contributed). A hook the library keeps for itself (a timeout's timer, an event
    /// stream) wants nothing. (Getters read with no lock held.)
    package static func isWanted(_ operation: Operation) -> Bool {
        let (waited, dependents, owners) = operation._readState { state -> (Bool, [Operation], [Operation]) in
            var waited = false
            var owners: [Operation] = []
            for waiter in state.finishWaiters {
                switch waiter {
                case .thread, .hook(_, .caller, _): waited = true
                case .hook(_, .operation(let reference), _):
                    if let owner = reference.operation { owners.append(owner) }
                case .hook(_, .bookkeeping, _): break
                }
            }
            return (waited, waited ? [] : DependentReference.retainedIfAlive(state.dependents), owners)
        }
        if waited { return true }
        // Its edges, not the list or hook that named it, decide: the same graph every
        // reader follows. (Getters read with no lock held.)
        let wanting = { (candidate: Operation, isDependency: Bool) -> Bool in
            !candidate.isCancelled && !candidate.isFinished && waits(candidate, for: operation, isDependency: isDependency)
        }
        return dependents.contains { wanting($0, true) } || owners.contains { wanting($0, false) }
    }
}
