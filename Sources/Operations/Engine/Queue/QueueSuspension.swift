/// Whether a queue is suspended, and what waits for it to resume: the two exclude each
/// other, so nothing can be left for a resumption of a queue that runs.
enum QueueSuspension {
    case running
    case suspended(LeftForResumption)

    /// What a suspended queue keeps for its resumption.
    struct LeftForResumption {
        /// What gates asked to be told of the resumption, having found the queue suspended
        /// while they were deciding: run first, in that order.
        var actions: [@Sendable () -> Void] = []
        /// Operations whose gates were due meanwhile, each once: consulted then (a category
        /// is not taken, nor a condition evaluated, for work that cannot start).
        var gated: [Operation] = []
        var gatedIDs: Set<ObjectIdentifier> = []
    }

    var isSuspended: Bool {
        if case .suspended = self { return true }
        return false
    }

    /// How many operations are kept to consult their gates at the resumption.
    var gatedCount: Int {
        guard case .suspended(let left) = self else { return 0 }
        return left.gated.count
    }

    /// Suspends (kept as it is when suspended already).
    mutating func suspend() {
        guard case .running = self else { return }
        self = .suspended(LeftForResumption())
    }

    /// Resumes: returns what was left for the resumption, for the caller to run after the lock.
    mutating func resume() -> LeftForResumption {
        guard case .suspended(let left) = self else { return LeftForResumption() }
        self = .running
        return left
    }

    /// Keeps `action` for the resumption; false (nothing kept) when the queue runs.
    mutating func deferUntilResumed(_ action: @escaping @Sendable () -> Void) -> Bool {
        guard case .suspended(var left) = self else { return false }
        self = .running  // Drops the reference, so that the array is changed in place.
        left.actions.append(action)
        self = .suspended(left)
        return true
    }

    /// Keeps `operation` (once) to consult its gates at the resumption; false when the
    /// queue runs (consult them now).
    mutating func keepGated(_ operation: Operation) -> Bool {
        guard case .suspended(var left) = self else { return false }
        self = .running
        if left.gatedIDs.insert(ObjectIdentifier(operation)).inserted {
            left.gated.append(operation)
        }
        self = .suspended(left)
        return true
    }
}
