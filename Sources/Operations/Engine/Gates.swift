// Gates: what an operation must pass after its dependencies and before it is ready.

/// Something an operation must pass once its dependencies have finished and before it is
/// ready. A gate is not an operation: nothing lists, counts or records it as work.
///
/// The engine consults an operation's gates one after another, in the order they were
/// added, once its dependencies have finished and its queue is not suspended; a gate
/// admits the operation (``GatePass/admit()``) at once or later, from any thread. A gate
/// that refuses cancels the operation (a cancelled operation passes every gate, as it
/// ignores its dependencies).
///
/// A dependency added after the gates were consulted withdraws the admission: the gates
/// are released and consulted again, from the first, once the new dependency has finished.
package protocol OperationGate: AnyObject, Sendable {
    /// The operation's dependencies have finished: decide whether it may go on, and call
    /// `pass.admit()` once it may. Called without a lock held.
    func consult(_ pass: GatePass)

    /// What `consult` began for `pass` is over (see ``GateRelease``): give back what it
    /// took, ignore what it still decides. Called once per consultation, without a lock held.
    func release(_ pass: GatePass, because reason: GateRelease)

    /// Why the operation waits at this gate, for wait reasons and stall reports.
    func waitReason(for operation: Operation) -> Operation.WaitReason

    /// Where the gate stands among the operation's gates: lower ranks are consulted first,
    /// equal ranks in the order added.
    var rank: Int { get }
}

/// Why a consultation of a gate ended before, or after, the operation ran.
package enum GateRelease: Sendable {
    /// The operation gained a dependency before it started: it will be consulted again.
    case dependencyAdded
    /// The operation was cancelled before it started: it will not run its work.
    case cancelled
    /// The operation finished.
    case finished
}

/// One consultation of one gate: what the gate calls to admit the operation.
package struct GatePass: Sendable {
    /// The operation at the gate.
    package let operation: Operation
    /// The consultation round: a round ends when the admission is withdrawn.
    package let round: UInt32
    /// The gate's position among the operation's gates.
    let index: Int

    /// Lets the operation go on to its next gate, or become ready after the last. Does
    /// nothing when the round is over (the admission was withdrawn, or the operation was
    /// cancelled or finished meanwhile); calling it twice is harmless.
    package func admit() {
        operation._gateAdmitted(self)
    }
}

/// The gates of one operation and where its consultation stands. In the side box
/// (`OperationExtras`), under the operation's lock.
///
/// While the gates are closed they count as one unfinished dependency (`pendingDependencyCount`
/// includes it), so everything that asks whether an operation is ready as far as the engine
/// goes needs no look at them; they are consulted when that unit is the only one left.
struct GateState {
    var gates: [any OperationGate] = []
    var round: UInt32 = 0
    /// Gates that admitted the operation in this round.
    var passed = 0
    /// The gate at `passed` is being consulted.
    var isConsulting = false
    /// Every gate admitted the operation: its unit is no longer counted.
    var isOpen = false

    /// The consultations under way or done in this round, to release.
    func consulted(_ operation: Operation) -> [(any OperationGate, GatePass)] {
        let count = min(passed + (isConsulting ? 1 : 0), gates.count)
        return (0..<count).map { (gates[$0], GatePass(operation: operation, round: round, index: $0)) }
    }
}

extension OperationCore {
    /// The gate of type `G` of an operation in no queue, added (by rank) when it has none;
    /// nil when the operation is in a queue or has started.
    mutating func gate<G: OperationGate>(_ type: G.Type, orAdd make: () -> G) -> G? {
        guard case .idle = phase, queue == nil else { return nil }
        if let existing = extras?.gates?.gates.lazy.compactMap({ $0 as? G }).first { return existing }
        if extras?.gates == nil {
            extras(orNew: ()).gates = GateState()
            // The closed gates' unit.
            gainDependency()
        }
        let gate = make()
        let position = extras!.gates!.gates.firstIndex { $0.rank > gate.rank } ?? extras!.gates!.gates.endIndex
        extras!.gates!.gates.insert(gate, at: position)
        return gate
    }

    /// The gate to consult now, if the operation waits in a queue with only its gates left.
    mutating func gateToConsult(for operation: Operation) -> (any OperationGate, GatePass)? {
        guard let gates = extras?.gates, !gates.isOpen, !gates.isConsulting, !cancellation.isCancelled,
            pendingDependencyCount == 1, queue != nil
        else { return nil }
        // Also from the ready list: an operation there that gained a dependency stays until
        // a worker pops it, and that dependency may finish first.
        guard phase.isQueuedNotClaimed else { return nil }
        extras!.gates!.isConsulting = true
        return (gates.gates[gates.passed], GatePass(operation: operation, round: gates.round, index: gates.passed))
    }

    enum GateAdmission {
        /// Stale: the round is over, or the gate had admitted already.
        case ignored
        /// Consult the next gate.
        case next(any OperationGate, GatePass)
        /// Every gate admitted: the operation may become ready.
        case open
    }

    /// A gate admitted the operation.
    mutating func gateAdmitted(_ pass: GatePass) -> GateAdmission {
        guard let gates = extras?.gates, gates.round == pass.round, gates.isConsulting, gates.passed == pass.index,
            !phase.isFinishingOrFinished
        else { return .ignored }
        extras!.gates!.passed += 1
        extras!.gates!.isConsulting = false
        guard extras!.gates!.passed == gates.gates.count else {
            extras!.gates!.isConsulting = true
            let index = gates.passed + 1
            return .next(gates.gates[index], GatePass(operation: pass.operation, round: gates.round, index: index))
        }
        extras!.gates!.isOpen = true
        loseDependency()
        return .open
    }

    /// Ends the round (`reason` says why) and returns the consultations to release. A
    /// dependency added before the start closes the gates again; a cancellation before the
    /// start or a finish leaves them as they are (a cancelled operation ignores them).
    /// Nothing to release when nothing was consulted, or when the operation has started
    /// and a dependency was added (too late to matter, as on Darwin).
    mutating func endGateRound(for operation: Operation, because reason: GateRelease) -> [(any OperationGate, GatePass)] {
        guard let gates = extras?.gates else { return [] }
        switch reason {
        case .dependencyAdded, .cancelled:
            guard phase.isQueuedNotClaimed || phase.kind == .idle else { return [] }
        case .finished:
            break
        }
        let consulted = gates.consulted(operation)
        guard !consulted.isEmpty || gates.isOpen else { return [] }
        extras!.gates!.round &+= 1
        extras!.gates!.passed = 0
        extras!.gates!.isConsulting = false
        if reason == .dependencyAdded, gates.isOpen {
            extras!.gates!.isOpen = false
            gainDependency()
        }
        return consulted
    }

    /// Why the operation waits at its gates, while it does: the gate being consulted (or
    /// the first, before the consultation).
    func gateWaiting() -> (any OperationGate)? {
        guard let gates = extras?.gates, !gates.isOpen, !cancellation.isCancelled, gates.passed < gates.gates.count
        else { return nil }
        return gates.gates[gates.passed]
    }
}

extension Operation {
    /// The operation's gate of type `G`, made by `make` and added when it has none; nil
    /// when the operation is in a queue or has started (gates are added before).
    package final func _gate<G: OperationGate>(_ type: G.Type, orAdd make: () -> G) -> G? {
        _update { $0.gate(type, orAdd: make) }
    }

    /// The operation's gates, in the order added.
    package final var _gates: [any OperationGate] {
        guard _visibleGated else { return [] }
        return _update { $0.extras?.gates?.gates ?? [] }
    }

    /// Consults the next gate when only the gates are left (its queue not suspended).
    final func _consultGatesIfDue() {
        guard _visibleGated else { return }
        guard let queue = _update({ $0.queue }), queue._mayConsultGates(of: self) else { return }
        guard let (gate, pass) = _update({ $0.gateToConsult(for: self) }) else { return }
        gate.consult(pass)
    }

    /// A gate admitted the operation (`GatePass.admit()`).
    final func _gateAdmitted(_ pass: GatePass) {
        switch _update({ $0.gateAdmitted(pass) }) {
        case .ignored:
            return
        case .next(let gate, let next):
            gate.consult(next)
        case .open:
            let observed = _hasObservers
            if observed { _announceWillChange("isReady"); _announceDidChange("isReady") }
            _readinessChanged()
        }
    }

    /// Ends the consultation round and releases what the gates took.
    final func _releaseGates(because reason: GateRelease) {
        guard _visibleGated else { return }
        let consulted = _update { $0.endGateRound(for: self, because: reason) }
        for (gate, pass) in consulted { gate.release(pass, because: reason) }
    }
}
