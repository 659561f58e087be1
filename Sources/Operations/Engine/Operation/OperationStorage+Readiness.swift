// Readiness as the holder of the operation's lock: a change that may make the operation
// ready is checked with no lock held (`isReady` may be user code) and decided under it.

extension Operation {
    /// Something that may change readiness happened: check `isReady` (user code, no lock
    /// held) and hand the operation to its queue when it reads true. A change announced
    /// while a check is under way makes that check run again, so none is lost.
    final func _readinessChanged() {
        if _visibleGated { _consultGatesIfDue() }
        _checkReadiness(from: _update { $0.readinessTrigger() })
    }

    /// The check `_readinessChanged()` runs once its trigger (`OperationCore.readinessTrigger()`)
    /// returned `trigger`: nil when there is nothing to check.
    private func _checkReadiness(from trigger: UInt32?) {
        guard var generation = trigger else { return }
        while true {
            let ready = isReady
            switch _update({ $0.readinessChecked(generation: generation, isReady: ready) }) {
            case .done:
                return
            case .retry(let next):
                generation = next
            case .deliver(let queue, let priority):
                queue._operationBecameReady(self, priority: priority)
                return
            }
        }
    }

    /// One of this operation's dependencies finished (`finished`: it leaves the hidden list,
    /// if it is on it), or the edge was removed, or a barrier's own hold went.
    final func _dependencyFinished(_ finished: Operation? = nil) {
        let leaving = finished.map(ObjectIdentifier.init)
        // No observer of `isReady` to tell between the count and the check: one lock
        // section counts the dependency out and, without gates, starts the check.
        guard _hasObservers else {
            let (followUp, left) = _update { state -> (OperationCore.LossFollowUp, Operation?) in
                let followUp = state.loseDependencyTriggeringReadiness()
                guard let leaving else { return (followUp, nil) }
                return (followUp, state.hiddenDependencyFinished(leaving))
            }
            // The list's reference is dropped here, after the lock.
            _ = consume left
            switch followUp {
            case .consultGates: return _readinessChanged()
            case .check(let trigger): return _checkReadiness(from: trigger)
            }
        }
        _announceWillChange("isReady")
        let left = _update { state -> Operation? in
            state.loseDependency()
            guard let leaving else { return nil }
            return state.hiddenDependencyFinished(leaving)
        }
        _ = consume left
        _announceDidChange("isReady")
        _readinessChanged()
    }
}
