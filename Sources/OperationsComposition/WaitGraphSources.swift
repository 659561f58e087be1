// What the composition layer's operations, gates and queues wait for, as edges of the wait
// graph (`WaitGraph` of `Operations`): escalation, stall reports and upstream cancellation
// read them there.

@_spi(Engine) import Operations

extension GroupOperation: WaitGraphSource {
    /// A group waits for its unfinished children to finish; until it has opened their
    /// queue they do not hold it up (it waits to start, and they wait for it).
    package func waitEdges(of operation: Operation) -> [WaitEdge] {
        guard operation === self else { return [] }
        let (children, opened) = _unfinishedChildrenAndOpened
        let pending = children.filter { !$0._isFinishingFlag }
        return pending.isEmpty ? [] : [WaitEdge(.child, pending, isDormant: !opened)]
    }

    package func waits(_ operation: Operation, for target: Operation) -> Bool {
        operation === self && !target._isFinishingFlag && _isChild(target)
    }
}

extension GroupChildQueue: WaitGraphSource {
    /// A child waits for its group to start while the group holds the queue for that (the
    /// library's suspension, not the user's: a suspension through `isChildQueueSuspended`
    /// is the user's, and no edge explains it).
    package func waitEdges(of operation: Operation) -> [WaitEdge] {
        guard let group, group._holdsChildrenUntilStart else { return [] }
        return [WaitEdge(.owner, [group])]
    }
}

extension RetryOperation: WaitGraphSource {
    /// A retry waits for its running attempt, and before it finishes for whatever else its
    /// attempts' queue still runs (what an attempt's condition contributed).
    package func waitEdges(of operation: Operation) -> [WaitEdge] {
        guard operation === self else { return [] }
        var seen = Set<ObjectIdentifier>()
        let pending = ([_currentAttempt].compactMap { $0 } + attemptQueue.operations)
            .filter { !$0._isFinishingFlag && seen.insert(ObjectIdentifier($0)).inserted }
        return pending.isEmpty ? [] : [WaitEdge(.attempt, pending)]
    }

    package func waits(_ operation: Operation, for target: Operation) -> Bool {
        operation === self && !target._isFinishingFlag
            && (_currentAttempt === target || target._queueWhileUnfinished === attemptQueue)
    }
}

extension ExclusivityGate: WaitGraphSource {
    /// An operation in line for a category waits for the operations holding it, and for
    /// those in line ahead of it.
    func waitEdges(of operation: Operation) -> [WaitEdge] {
        let ids = _requestIDs
        guard !ids.isEmpty else { return [] }
        let holders = ExclusivityManager.state.withLock { state in ids.flatMap { state.holders(blocking: $0) } }
        let pending = holders.filter { $0 !== operation && !$0._isFinishingFlag }
        return pending.isEmpty ? [] : [WaitEdge(.holder, pending)]
    }
}

extension ConditionGate: WaitGraphSource {
    /// A guarded operation waits for what its conditions contributed, until it is admitted.
    func waitEdges(of operation: Operation) -> [WaitEdge] {
        let contributed = _contributed.filter { !$0._isFinishingFlag }
        return contributed.isEmpty ? [] : [WaitEdge(.contributed, contributed)]
    }

    func waits(_ operation: Operation, for target: Operation) -> Bool {
        !target._isFinishingFlag && _contributed.contains { $0 === target }
    }
}
