extension Operation {
    /// Adds an edge `operation → self`; `visible: false` makes a hidden dependency (used by
    /// barriers) that ``dependencies`` does not list.
    final func _addEdge(from operation: Operation, visible: Bool) {
        // Count it first, so that a dependency finishing meanwhile cannot make the count
        // reach zero early; take it back if the dependency had already finished.
        let added = _update { state in
            if visible {
                if !state.appendDependency(operation) { return false }
            } else {
                state.hiddenDependencies.append(operation)
            }
            state.pendingDependencyCount += 1
            return true
        }
        guard added else { return }
        let observed = _hasObservers
        if observed { _announceWillChange("isReady") }
        let registered = _insertEdge(from: operation)
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
        _update { $0.hiddenDependencies.append(dependency) }
        if !_insertEdge(from: dependency) { _dependencyFinished() }
    }

    /// Inserts the edge `dependency → self` into the graph and the dependency's list of
    /// dependents; false when the dependency had already finished.
    /// - Important: An edge that closes a cycle is a programmer error.
    private func _insertEdge(from dependency: Operation) -> Bool {
        let insertion = DependencyGraph.insert(from: dependency, to: self) {
            dependency._update { state in
                guard !state.isCompleted else { return false }
                state.dependents.append(WeakOperation(operation: self))
                return true
            }
        }
        switch insertion {
        case .inserted(let registered):
            return registered
        case .cycle(let path, let alreadyRegistered):
            let message = "addDependency: making \(_misuseName) depend on \(dependency._misuseName) closes a dependency cycle: \(path.map(\._misuseName).joined(separator: " → "))"
            if Operation.trapsOnDependencyCycles { Misuse.fail(message) }
            // Darwin allows it: the operations wait for each other until one is cancelled.
            Misuse.warn(message + "; they wait for each other until one of them is cancelled (set Operation.trapsOnDependencyCycles to stop here instead)")
            if let alreadyRegistered { return alreadyRegistered }
            return dependency._update { state in
                guard !state.isCompleted else { return false }
                state.dependents.append(WeakOperation(operation: self))
                return true
            }
        }
    }

    /// The operations waiting for this one (while it has not finished).
    final var _liveDependents: [Operation] {
        _update { state in state.dependents.compactMap(\.operation) }
    }

    final var _hasLiveDependents: Bool { !_liveDependents.isEmpty }

    /// The unfinished operations this one waits for.
    final var _liveDependencies: [Operation] { _allDependencies.filter { !$0._isCompleted } }

    final var _hasLiveDependencies: Bool { _allDependencies.contains { !$0._isCompleted } }

    /// Every operation this one waits for or waited for, visible or hidden.
    private var _allDependencies: [Operation] { _update { $0.dependencies + $0.hiddenDependencies } }

    /// Whether the finish has been processed (dependents released).
    final var _isCompleted: Bool { _update { $0.isCompleted } }
}

extension Operation {
    /// Whether closing a dependency cycle stops the process (with a message listing the
    /// operations in the cycle) instead of printing that message as a warning.
    ///
    /// Off by default, as on Darwin, where a cycle is allowed and broken by cancelling one
    /// of its operations (a cancelled operation ignores its dependencies). Operations hold
    /// their dependencies, so a cycle is also a retain cycle until one of its dependencies
    /// is removed. Turn it on in tests and debug builds; the environment variable
    /// `OPERATIONS_TRAP_ON_DEPENDENCY_CYCLES=1` turns it on at launch.
    public static var trapsOnDependencyCycles: Bool {
        get { DependencyGraph.trapsOnCycles.load(ordering: .relaxed) }
        set { DependencyGraph.trapsOnCycles.store(newValue, ordering: .relaxed) }
    }
}
