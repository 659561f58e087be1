extension Operation {
    /// Adds an edge `operation → self`; `visible: false` makes a hidden dependency (used by
    /// barriers) that ``dependencies`` does not list.
    final func _addEdge(from operation: Operation, visible: Bool) {
        if operation === self {
            Misuse.fail("addDependency: \(_misuseName) cannot depend on itself (a dependency cycle)")
        }
        // Count it first, so that a dependency finishing meanwhile cannot make the count
        // reach zero early; take it back if the dependency had already finished.
        let added = _update { state in
            if visible, !state.appendDependency(operation) { return false }
            state.pendingDependencyCount += 1
            return true
        }
        guard added else { return }
        let observed = _hasObservers
        if observed { _announceWillChange("isReady") }
        let registered = operation._update { state in
            guard !state.isCompleted else { return false }
            state.dependents.append(WeakOperation(operation: self))
            return true
        }
        if !registered {
            _update { $0.pendingDependencyCount -= 1 }
        }
        if observed { _announceDidChange("isReady") }
        if !registered { _readinessChanged() }
    }

    /// Removes the edge `operation → self`, if the dependency has not released it yet.
    final func _removeEdge(from operation: Operation) {
        let unregistered = operation._update { state in
            guard let index = state.dependents.firstIndex(where: { $0.operation === self }) else { return false }
            state.dependents.remove(at: index)
            return true
        }
        // Not found: the dependency already finished and released (or is releasing) us.
        if unregistered { _dependencyFinished() }
    }
}

extension Operation {
    /// Registers the edge `dependency → self` whose count the queue already raised when it
    /// admitted this operation (the wait for a pending barrier).
    final func _registerHiddenEdge(from dependency: Operation) {
        let registered = dependency._update { state in
            guard !state.isCompleted else { return false }
            state.dependents.append(WeakOperation(operation: self))
            return true
        }
        if !registered { _dependencyFinished() }
    }
}
