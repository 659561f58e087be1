// Admission: validating and adding operations, all or nothing.

extension OperationQueue {
    enum AddOutcome {
        /// Per operation, the barrier it must wait for.
        case added([Operation?])
        case refused(Operation, QueueCore.Refusal)
    }

    final func _add(_ operations: some Collection<Operation>) {
        let observed = _hasObservers
        if observed { _announceWillChange("operationCount"); _announceWillChange("operations") }
        let outcome = core.withLock { state -> AddOutcome in
            // Validate everything before changing anything: all or nothing.
            for operation in operations {
                if let refusal = state.refusal(for: operation, queue: self) { return .refused(operation, refusal) }
            }
            var barriers: [Operation?] = []
            barriers.reserveCapacity(operations.count)
            for operation in operations {
                let (admitted, barrier) = state.admit(operation, queue: self)
                guard admitted else {
                    // Listed twice in one batch: undo the batch, then refuse.
                    for (earlier, barrier) in zip(operations, barriers) {
                        state.unadmit(earlier, hadBarrier: barrier != nil)
                    }
                    return .refused(operation, .inThisQueue)
                }
                barriers.append(barrier)
            }
            return .added(barriers)
        }
        switch outcome {
        case .refused(let operation, let refusal):
            _refuse(operation, refusal)
        case .added(let barriers):
            if observed { _announceDidChange("operationCount"); _announceDidChange("operations") }
            for (operation, barrier) in zip(operations, barriers) {
                if let barrier { operation._registerHiddenEdge(from: barrier) }
                operation._readinessChanged()
            }
        }
    }

    private func _refuse(_ operation: Operation, _ refusal: QueueCore.Refusal) -> Never {
        let who = operation._misuseName
        let queue = "queue \"\(name ?? "?")\""
        switch refusal {
        case .inThisQueue:
            Misuse.fail("addOperation: \(who) is already in \(queue); an operation can be added to a queue only once")
        case .inAnotherQueue:
            Misuse.fail("addOperation: \(who) is already in another queue; an operation can be in at most one queue, ever")
        case .executing:
            Misuse.fail("addOperation: \(who) is executing and cannot be added to \(queue)")
        case .finished:
            Misuse.fail("addOperation: \(who) has finished and cannot be added to \(queue); an operation runs at most once")
        }
    }
}
