// Admission as the queue's engine step: validating and adding operations, all or nothing;
// the layers are told through the queue's hooks (enqueue hooks, observers, events).

extension OperationQueue {
    /// Adds operations, all or none. `inheritQoS` gives them the queue's quality of service
    /// (for the ones the queue made from blocks).
    final func _add(
        _ operations: some Collection<Operation>, inheritQoS: Bool = false,
        call: String = "addOperation", usingReservedPlace: Bool = false, prerequisiteOf guarded: Operation? = nil
    ) {
        _runEnqueueHooks(operations)
        let observed = _hasObservers
        if observed { _membershipWillChange() }
        // Read readiness before the lock (the getter may be user code), so that a ready
        // operation goes straight into the ready list under the one lock acquisition.
        let single = operations.count == 1 ? Self._reading(of: operations.first!) : nil
        let readings = single == nil ? operations.map(Self._reading(of:)) : []
        let outcome = _admitAll(
            operations, single: single, readings: readings, inheritQoS: inheritQoS,
            usingReservedPlace: usingReservedPlace, prerequisiteOf: guarded)
        switch outcome {
        case .refused(let operation, let refusal):
            _refuse(operation, refusal, call: call)
        case .added(let barrier, let undelivered, let wakeup):
            if observed { _membershipDidChange() }
            _eventsRecorded()
            if let barrier {
                for operation in operations where operation !== barrier { operation._registerHiddenEdge(from: barrier) }
            }
            for operation in undelivered { operation._readinessChanged() }
            _perform(wakeup)
        }
    }

    /// Adds an operation that a gate of `guarded` (in this queue) needs to finish first (a
    /// condition's "sign in"): it waits for no barrier added after `guarded`, and takes
    /// `guarded`'s place in the start order.
    package final func _addPrerequisite(_ operation: Operation, of guarded: Operation) {
        _add(CollectionOfOne(operation), prerequisiteOf: guarded)
    }

    /// Adds an operation the queue made from a block or an async body, with the queue's
    /// quality of service, through `addOperation(_:)`, so that a subclass's override sees it
    /// (as Foundation does for blocks). A queue of this class itself, which overrides
    /// nothing, takes the shorter path to the same result.
    @usableFromInline
    final func _addMade(_ operation: Operation) {
        guard type(of: self) == OperationQueue.self else {
            if let quality = _qualityOfServiceSet {
                operation.qualityOfService = quality
            }
            addOperation(operation)
            return
        }
        _addFresh(operation)
    }

    /// Adds one operation the queue just made itself (from a block), with the queue's
    /// quality of service: `_add` for the most common call, without the batch's
    /// bookkeeping (nobody else has seen the operation, so it cannot be refused, and it is
    /// ready). `usingReservedPlace` as in `_add`.
    final func _addFresh(_ operation: Operation, usingReservedPlace: Bool = false) {
        _runEnqueueHooks(CollectionOfOne(operation))
        let observed = _hasObservers
        if observed { _membershipWillChange() }
        let (barrier, delivered, wakeup) = _admitMade(operation, usingReservedPlace: usingReservedPlace)
        if observed { _membershipDidChange() }
        _eventsRecorded()
        if let barrier { operation._registerHiddenEdge(from: barrier) }
        if !delivered { operation._readinessChanged() }
        _perform(wakeup)
    }

    private func _refuse(_ operation: Operation, _ refusal: QueueCore.Refusal, call: String) -> Never {
        let who = operation._misuseName
        let queue = _misuseName
        switch refusal {
        case .inThisQueue:
            Misuse.fail("\(call): \(who) is already in \(queue); an operation can be added to a queue only once")
        case .twiceInBatch:
            Misuse.fail("\(call): \(who) is listed more than once in the operations added to \(queue); an operation can be added to a queue only once (nothing was added)")
        case .inAnotherQueue(let owner):
            let other = owner.map { "another queue (\"\($0.name ?? "?")\")" } ?? "another queue"
            Misuse.fail("\(call): \(who) is already in \(other) and cannot be added to \(queue); an operation can be in at most one queue, ever")
        case .executing:
            Misuse.fail("\(call): \(who) is executing and cannot be added to \(queue); an operation runs at most once")
        case .finished:
            Misuse.fail("\(call): \(who) has finished and cannot be added to \(queue); an operation runs at most once")
        }
    }

    /// How misuse messages name the queue.
    package final var _misuseName: String { "queue \"\(name ?? "?")\"" }
}
