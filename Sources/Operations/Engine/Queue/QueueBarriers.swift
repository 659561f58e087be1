/// A queue's barriers (`addBarrierBlock`) that have not finished, and the operations they
/// hold back.
struct QueueBarriers {
    /// The newest barrier not yet finished: operations added after it wait for it.
    private(set) var pending: Operation?
    /// The barriers not yet finished, oldest first.
    private var gates: [Gate] = []
    /// Operations that became ready (cancelled ones) while a barrier added before them had
    /// not run: they go to the ready list once it has, in the band they have then.
    private var held: [Operation] = []

    /// A barrier that has not finished, and where it stands in the order added: every
    /// operation numbered from `firstSequenceAfter` on, but the barrier, was added after it.
    /// (Numbered when the barrier was announced, before it was added: an operation added
    /// by another thread in between waits for the barrier too.)
    private struct Gate {
        var barrier: ObjectIdentifier
        var firstSequenceAfter: UInt64
    }

    /// Whether no barrier is unfinished (the common case: nothing else to check).
    var isEmpty: Bool { gates.isEmpty }

    /// `barrier` was admitted; operations numbered from `firstSequenceAfter` on wait for it.
    mutating func admitted(_ barrier: Operation, firstSequenceAfter: UInt64) {
        pending = barrier
        gates.append(Gate(barrier: ObjectIdentifier(barrier), firstSequenceAfter: firstSequenceAfter))
    }

    /// Whether `operation` was added after a barrier that has not finished.
    ///
    /// Only a cancelled operation can be ready then (the others wait for the barrier as a
    /// dependency, which a cancelled one ignores): it does not start, not even for its
    /// cancelled pass through `start()`, until the barrier has run.
    func holdsBack(_ operation: Operation) -> Bool {
        guard let gate = gates.first else { return false }
        return operation._addSequence >= gate.firstSequenceAfter && ObjectIdentifier(operation) != gate.barrier
    }

    /// Holds `operation` back until the barriers before it have run.
    mutating func hold(_ operation: Operation) {
        held.append(operation)
    }

    /// Takes a held operation back (its batch was refused); false when it was not held.
    mutating func release(_ operation: Operation) -> Bool {
        guard let index = held.firstIndex(where: { $0 === operation }) else { return false }
        held.remove(at: index)
        return true
    }

    /// `operation` finished: when it is a barrier, returns the operations it held back, for
    /// the caller to deliver in the bands they have now.
    mutating func finished(_ operation: Operation) -> [Operation] {
        guard let index = gates.firstIndex(where: { $0.barrier == ObjectIdentifier(operation) }) else { return [] }
        gates.remove(at: index)
        defer { held = [] }
        return held
    }

    /// `operation` left the queue: it is no longer the barrier new operations wait for.
    mutating func left(_ operation: Operation) {
        if operation === pending { pending = nil }
    }
}
