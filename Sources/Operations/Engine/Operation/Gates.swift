// Gates: what an operation must pass after its dependencies and before it is ready.

/// Something an operation must pass once its dependencies have finished and before it is
/// ready. A gate is not an operation: nothing lists, counts or records it as work.
///
/// The engine consults an operation's gates one after another, by rank, once its dependencies have finished and its queue is not suspended; a gate
/// admits the operation (``GatePass/admit()``) at once or later, from any thread. A gate
/// that refuses cancels the operation (a cancelled operation passes every gate, as it
/// ignores its dependencies).
///
/// A dependency added after the gates were consulted withdraws the admission: the gates
/// are released and consulted again, from the first, once the new dependency has finished.
/// A queue suspended after a gate was consulted does not withdraw it: a gate still deciding
/// asks ``GatePass/deferIfQueueSuspended(then:)`` before it hands the operation anything.
package protocol OperationGate: AnyObject, Sendable {
    /// The operation's dependencies have finished: decide whether it may go on, and call
    /// `pass.admit()` once it may. Called without a lock held.
    func consult(_ pass: GatePass)

    /// What `consult` began for `pass`'s round is over (see ``GateRelease``): give back what
    /// it took, ignore what it still decides. Called without a lock held: for each gate
    /// consulted in a round that a new dependency ends, and, once, for every gate ever
    /// consulted when the operation is cancelled before it started or finishes. It may come
    /// before, or while, `consult` runs for that round: the gate must then not take anything
    /// for it.
    func release(_ pass: GatePass, because reason: GateRelease)

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

    /// Whether the operation's queue is suspended now; if it is, `resumed` runs (no lock
    /// held) once the queue resumes. False for an operation in no queue.
    ///
    /// For a gate still deciding when the queue was suspended: the engine consults no gate
    /// of a suspended queue, but one consulted before may be about to hand the operation
    /// something (a category) it should not hold while it cannot start. The answer and the
    /// keeping of `resumed` are one step under the queue's lock: a resumption cannot come
    /// between them. `resumed` runs once per call that returned true.
    package func deferIfQueueSuspended(then resumed: @escaping @Sendable () -> Void) -> Bool {
        guard let queue = operation._queue else { return false }
        return queue._deferUntilResumed(resumed)
    }
}

/// The gates of one operation and where its consultation stands. In the side box
/// (`OperationExtras`), under the operation's lock.
///
/// While the gates are closed they count as one unfinished dependency (`pendingDependencyCount`
/// includes it), so everything that asks whether an operation is ready as far as the engine
/// goes needs no look at them; they are consulted when that unit is the only one left.
struct GateState {
    var gates = GateList()
    var round: UInt32 = 0
    /// Gates that admitted the operation in this round.
    var passed = 0
    /// The gate at `passed` is being consulted (or about to be).
    var isConsulting = false
    /// Every gate admitted the operation: its unit is no longer counted.
    var isOpen = false
    /// How many gates, from the first, were ever consulted: each is told the end.
    var everConsulted = 0
    /// The operation was cancelled before it started, or finished: nothing is consulted again.
    var isEnded = false

    /// The consultations under way or done in this round.
    var consultedInRound: GateConsultations {
        GateConsultations(gates: gates, count: min(passed + (isConsulting ? 1 : 0), gates.count), round: round)
    }
}

/// An operation's gates, by rank: the first kept inline (most operations with gates have
/// one), the others in an array.
struct GateList {
    private var first: (any OperationGate)?
    private var others: [any OperationGate] = []

    var count: Int { first == nil ? 0 : 1 + others.count }

    subscript(index: Int) -> any OperationGate { index == 0 ? first! : others[index - 1] }

    /// Every gate, in order.
    var all: [any OperationGate] { first.map { [$0] + others } ?? [] }

    /// The gate of type `G`, if there is one.
    func first<G: OperationGate>(of type: G.Type) -> G? {
        if let gate = first as? G { return gate }
        return others.lazy.compactMap { $0 as? G }.first
    }

    /// Adds `gate` after the gates of its rank or lower.
    mutating func insert(_ gate: any OperationGate) {
        guard first != nil else {
            first = gate
            return
        }
        var gates = all
        gates.insert(gate, at: gates.firstIndex { $0.rank > gate.rank } ?? gates.endIndex)
        first = gates.removeFirst()
        others = gates
    }
}

/// Consultations to release after the lock: the first `count` gates of a list, with one
/// round's passes. (It holds the list itself: no array is made per release.)
struct GateConsultations {
    var gates = GateList()
    var count = 0
    var round: UInt32 = 0

    var isEmpty: Bool { count == 0 }

    /// Tells each gate that its consultation of `operation` is over.
    func release(of operation: Operation, because reason: GateRelease) {
        for index in 0..<count {
            gates[index].release(GatePass(operation: operation, round: round, index: index), because: reason)
        }
    }
}

extension OperationCore {
    // Each access to a stored property of the side box (a class) is a dynamic exclusivity
    // check: every event below reads and changes the gate state in one access.

    /// Runs `body` on the gate state, in one access; nil when there is none.
    @inline(__always)
    private static func changing<Result>(_ gates: inout GateState?, _ body: (inout GateState) -> Result?) -> Result? {
        guard gates != nil else { return nil }
        return body(&gates!)
    }

    /// The gate of type `G` of an operation in no queue, added (by rank) when it has none;
    /// nil when the operation is in a queue or has started.
    mutating func gate<G: OperationGate>(_ type: G.Type, orAdd make: () -> G) -> G? {
        guard case .idle = phase, queue == nil else { return nil }
        let box = extras(orNew: ())
        let (gate, isFirst) = { (gates: inout GateState?) -> (G, Bool) in
            if let existing = gates?.gates.first(of: G.self) { return (existing, false) }
            let isFirst = gates == nil
            if isFirst { gates = GateState() }
            let gate = make()
            gates!.gates.insert(gate)
            return (gate, isFirst)
        }(&box.gates)
        // The closed gates' unit.
        if isFirst { gainDependency() }
        return gate
    }

    /// Reserves the consultation of the next gate, if the operation waits in its queue with
    /// only its gates left; returns the gate, its pass and the queue.
    mutating func reserveGateConsultation(
        for operation: Operation
    ) -> (gate: any OperationGate, pass: GatePass, queue: OperationQueue)? {
        // Also from the ready list: an operation there that gained a dependency stays until
        // a worker pops it, and that dependency may finish first.
        guard let extras, !cancellation.isCancelled, pendingDependencyCount == 1, let queue, phase.isQueuedNotClaimed
        else { return nil }
        return Self.changing(&extras.gates) { gates in
            guard !gates.isOpen, !gates.isConsulting, !gates.isEnded else { return nil }
            gates.isConsulting = true
            gates.everConsulted = max(gates.everConsulted, gates.passed + 1)
            return (gates.gates[gates.passed], GatePass(operation: operation, round: gates.round, index: gates.passed), queue)
        }
    }

    /// Gives back a reservation that was not used (the queue is suspended).
    mutating func unreserveGateConsultation(_ pass: GatePass) {
        guard let extras else { return }
        _ = Self.changing(&extras.gates) { gates -> Void? in
            guard gates.round == pass.round, gates.isConsulting, gates.passed == pass.index else { return nil }
            gates.isConsulting = false
            return ()
        }
    }

    enum GateAdmission {
        /// Stale: the round is over, or the gate had admitted already.
        case ignored
        /// The next gate is due.
        case next
        /// Every gate admitted: the operation may become ready.
        case open
    }

    /// A gate admitted the operation.
    mutating func gateAdmitted(_ pass: GatePass) -> GateAdmission {
        guard let extras, !phase.isFinishingOrFinished else { return .ignored }
        let admission = Self.changing(&extras.gates) { gates -> GateAdmission in
            guard gates.round == pass.round, gates.isConsulting, gates.passed == pass.index, !gates.isEnded
            else { return .ignored }
            gates.passed += 1
            gates.isConsulting = false
            guard gates.passed == gates.gates.count else { return .next }
            gates.isOpen = true
            return .open
        } ?? .ignored
        if case .open = admission { loseDependency() }
        return admission
    }

    /// The operation gained a dependency (counted in the same lock section): before it
    /// started, that ends the round and closes the gates again; returns the consultations
    /// of the round, to release. (After the start it is too late to matter, as on Darwin.)
    mutating func gatesGainedDependency() -> GateConsultations {
        guard let extras, phase.isQueuedNotClaimed || phase.kind == .idle else { return GateConsultations() }
        let ended = Self.changing(&extras.gates) { gates -> (GateConsultations, closes: Bool)? in
            guard !gates.isEnded else { return nil }
            let consulted = gates.consultedInRound
            guard !consulted.isEmpty || gates.isOpen else { return nil }
            gates.round &+= 1
            gates.passed = 0
            gates.isConsulting = false
            let closes = gates.isOpen
            gates.isOpen = false
            return (consulted, closes)
        }
        guard let (consulted, closes) = ended else { return GateConsultations() }
        if closes { gainDependency() }
        return consulted
    }

    /// The operation was cancelled (`.cancelled`, only before it started: after, its finish
    /// ends them) or finished: the gates are done with it. Returns every gate ever consulted
    /// with this round's pass, to release, once.
    mutating func endGates(because reason: GateRelease) -> GateConsultations {
        guard let extras else { return GateConsultations() }
        if reason == .cancelled, !(phase.isQueuedNotClaimed || phase.kind == .idle) { return GateConsultations() }
        return Self.changing(&extras.gates) { gates in
            guard !gates.isEnded else { return nil }
            gates.isEnded = true
            gates.isConsulting = false
            let consulted = GateConsultations(gates: gates.gates, count: gates.everConsulted, round: gates.round)
            gates.round &+= 1
            return consulted
        } ?? GateConsultations()
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
        return _update { $0.extras?.gates?.gates.all ?? [] }
    }

    /// Consults the next gate when only the gates are left and its queue is not suspended
    /// (a suspended queue consults it when it resumes).
    final func _consultGatesIfDue() {
        guard _visibleGated else { return }
        while true {
            guard let (gate, pass, queue) = _update({ $0.reserveGateConsultation(for: self) }) else { return }
            if queue._mayConsultGates(of: self) {
                gate.consult(pass)
                return
            }
            _update { $0.unreserveGateConsultation(pass) }
            // The resumption consults it, unless it came between the two steps above and
            // found the consultation reserved: then try again.
            if queue._isSuspendedNow { return }
        }
    }

    /// A gate admitted the operation (`GatePass.admit()`).
    final func _gateAdmitted(_ pass: GatePass) {
        switch _update({ $0.gateAdmitted(pass) }) {
        case .ignored:
            return
        case .next:
            _consultGatesIfDue()
        case .open:
            _gatesOpened()
            _readinessChanged()
        }
    }

    /// The operation was cancelled before it started, or finished: releases what its gates
    /// took or are deciding.
    final func _endGates(because reason: GateRelease) {
        guard _visibleGated else { return }
        let consulted = _update { $0.endGates(because: reason) }
        consulted.release(of: self, because: reason)
    }
}
