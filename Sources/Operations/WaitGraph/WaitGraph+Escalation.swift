// Priority escalation along the wait graph: low-priority work that high-priority work waits
// for is raised, so that it does not hold the high-priority work up (priority inversion).
// Darwin does this for dependencies, Swift tasks do it for awaits; here every edge of the
// wait graph carries it: dependencies, barriers, a group's children, a retry's attempt, a
// condition's contributed operations, a category's holder, and waits inside running work.

extension Operation {
    /// Raises this operation, and every unfinished operation it waits for (transitively,
    /// over the wait graph), to at least `quality`: see `_raise(to:)`.
    ///
    /// The walk stops at operations already escalated that high (what they wait for was
    /// raised with them). A slot is not followed: raising the operation refiles it ahead in
    /// its queue, which is what decides who takes the next free slot.
    package final func _escalate(to quality: QualityOfService) {
        var pending: [Operation] = [self]
        var seen = Set<ObjectIdentifier>()
        while let operation = pending.popLast() {
            guard seen.insert(ObjectIdentifier(operation)).inserted, operation._raise(to: quality) else { continue }
            pending += WaitGraph.targets(of: operation)
        }
    }
}
