// How the engine follows an operation's state: readiness checks, the announcement of
// `isFinished`, and the work done once when it finishes.

extension Operation {
    /// Sets the base state to finished and announces it.
    final func _finish(wasExecuting: Bool) {
        if wasExecuting { _announceWillChange("isExecuting") }
        _announceWillChange("isFinished")
        _update { $0.phase = .finished }
        if wasExecuting { _announceDidChange("isExecuting") }
        _announceDidChange("isFinished")
        _stateAnnounced("isFinished")
    }

    /// A change of `key` was announced, by the base class or by a subclass.
    final func _stateAnnounced(_ key: String) {
        switch key {
        case "isFinished", "finished":
            // As on Darwin, the getter decides: a subclass that overrides `isFinished`
            // is finished when it says so.
            if isFinished { _complete() }
        case "isReady", "ready":
            _readinessChanged()
        default:
            break
        }
    }

    /// Something that may change readiness happened: check `isReady` (user code, no lock
    /// held) and hand the operation to its queue when it reads true. A change announced
    /// while a check is under way makes that check run again, so none is lost.
    final func _readinessChanged() {
        guard var generation = _update({ $0.readinessTrigger() }) else { return }
        while true {
            let ready = isReady
            switch _update({ $0.readinessChecked(generation: generation, isReady: ready) }) {
            case .done:
                return
            case .retry(let next):
                generation = next
            case .deliver(let queue, let priority):
                queue?._operationBecameReady(self, priority: priority)
                return
            }
        }
    }

    /// One of this operation's dependencies finished.
    final func _dependencyFinished() {
        let observed = _hasObservers
        if observed { _announceWillChange("isReady") }
        _update { $0.pendingDependencyCount -= 1 }
        if observed { _announceDidChange("isReady") }
        _readinessChanged()
    }

    /// The work done exactly once when the operation finishes: release dependents, free
    /// the queue slot, run the completion block, leave the queue, wake waiters.
    final func _complete() {
        guard var completion = _update({ $0.complete() }) else { return }
        // The event marks the finish itself, before any dependent can start.
        completion.queue?._emit(.finished(wasCancelled: isCancelled), self)
        for dependent in completion.dependents {
            dependent.operation?._dependencyFinished()
        }
        let queue = completion.queue
        if completion.completionBlock != nil {
            queue?._operationFinished(self, releasesSlot: completion.startedByQueue, leaves: false)
            // Taken out so that it is released before anyone waiting is woken.
            completion.completionBlock.take()!()
            queue?._operationFinished(self, releasesSlot: false, leaves: true)
        } else {
            queue?._operationFinished(self, releasesSlot: completion.startedByQueue, leaves: true)
        }
        for waiter in completion.waiters {
            waiter.signal()
        }
    }

}
