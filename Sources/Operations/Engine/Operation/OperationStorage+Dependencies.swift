// Dependency edges as the holder of both operations' locks: an edge is listed, registered
// with its dependency and counted in one section that holds the two locks.

extension Operation {
    /// Adds an edge `operation → self`; `visible: false` makes a hidden dependency (used by
    /// barriers) that ``dependencies`` does not list.
    ///
    /// The edge is listed, registered with the dependency and counted in one section that
    /// holds both operations' locks, so that a concurrent `removeDependency` or the
    /// dependency's finish sees all of it or none of it.
    final func _addEdge(from operation: Operation, visible: Bool) {
        if operation === self {
            Misuse.fail("addDependency: \(_misuseName) cannot depend on itself; it would wait for itself forever")
        }
        let observed = _hasObservers
        // Announced before the count changes, so that observers read the old value.
        if observed { _announceWillChange("isReady") }
        // An edge out of (or into) a finished operation can never block: it is listed,
        // and the graph of waiting operations never sees it.
        // Set when this operation runs at a higher quality of service than the dependency:
        // the dependency (and what it waits for) is escalated after the locks.
        var escalation: QualityOfService?
        // Consultations of gates the new dependency ends (see `gatesGainedDependency`); nil
        // without gates (nearly every edge), so that such an edge makes and drops no gate list.
        var released: GateConsultations?
        if operation._isFinishingFlag || _isFinishingFlag {
            _ = _link(from: operation, visible: visible, escalation: &escalation, released: &released)
        } else {
            // Unretained captures (the caller holds both; see `_withBothLocked`).
            let me = Unmanaged.passUnretained(self), dependency = Unmanaged.passUnretained(operation)
            _ = _insertEdge(from: operation) {
                me._withUnsafeGuaranteedRef { me in
                    dependency._withUnsafeGuaranteedRef {
                        me._link(from: $0, visible: visible, escalation: &escalation, released: &released)
                    }
                }
            }
        }
        if observed { _announceDidChange("isReady") }
        if let escalation { operation._escalate(to: escalation) }
        // Gates are consulted after every dependency, also one added after they admitted.
        released?.release(of: self, because: .dependencyAdded)
    }

    enum Link: Equatable, Sendable {
        /// Listed, registered with the dependency, counted.
        case counted
        /// Listed only: the dependency had finished.
        case listed
        /// Already a (visible) dependency: nothing changed.
        case duplicate
    }

    /// Lists, registers and counts the edge `dependency → self` under both locks.
    /// A new dependency of an operation with gates ends their round in the same section
    /// (`released`), so that the dependency cannot finish in between.
    private func _link(
        from dependency: Operation, visible: Bool, escalation: inout QualityOfService?,
        released: inout GateConsultations?
    ) -> Link {
        let me = Unmanaged.passUnretained(self), them = Unmanaged.passUnretained(dependency)
        return Operation._withBothLocked(self, dependency) { mine, theirs in
            if visible {
                // A long list asks the dependency first (see `surelyDoesNotList`).
                let knownNew = mine.dependencies.count >= OperationCore.shortList && mine.extras?.dependencyIndex == nil
                    && theirs.surelyDoesNotList(me.toOpaque(), dependentPhase: mine.phase)
                let listed = them._withUnsafeGuaranteedRef { mine.appendDependency($0, knownNew: knownNew) }
                guard listed else { return .duplicate }
            }
            guard !theirs.phase.isFinishingOrFinished else { return .listed }
            // A hidden edge is listed while it can hold the operation up (see `HiddenDependencies`).
            if !visible { mine.appendHiddenDependency(them.takeUnretainedValue()) }
            theirs.addDependent(me._withUnsafeGuaranteedRef { DependentReference($0) })
            mine.gainDependency()
            if mine.extras?.gates != nil { released = mine.gatesGainedDependency() }
            // Two byte compares in the common case (neither quality of service set). A barrier
            // (a hidden edge) raises nothing: it has its queue's quality of service, and the
            // operations before it keep the order their own priorities give them.
            if visible, let wanted = mine.threadQuality, wanted.rank > (theirs.threadQuality ?? .default).rank {
                escalation = wanted
            }
            return .counted
        }
    }

    /// Removes the edge `operation → self`: unlisted, unregistered and uncounted in one
    /// section. A dependency that already released this operation was uncounted then.
    final func _removeEdge(from operation: Operation) {
        guard operation !== self else { return }
        let observed = _hasObservers
        if observed { _announceWillChange("isReady") }
        let (removed, uncounted) = Operation._withBothLocked(self, operation) { mine, theirs -> (Operation?, Bool) in
            guard let removed = mine.removeDependency(operation) else { return (nil, false) }
            let me = Unmanaged.passUnretained(self).toOpaque()
            guard theirs.removeDependent(at: me) else { return (removed, false) }
            mine.loseDependency()
            return (removed, true)
        }
        if observed { _announceDidChange("isReady") }
        // The list's reference is dropped here, after the locks.
        _ = removed
        if uncounted { _readinessChanged() }
    }

    /// Runs `body` with both operations' locks held, taken in address order so that two
    /// threads locking the same pair cannot deadlock.
    static func _withBothLocked<Result>(
        _ first: Operation, _ second: Operation,
        _ body: (inout OperationCore, inout OperationCore) -> Result
    ) -> Result {
        // The closures capture unretained references (the caller holds both): a retain of
        // an operation that has weak references goes through its side table, and two per
        // edge made dependency-heavy graphs a third slower.
        let firstIsOuter = ObjectIdentifier(first) < ObjectIdentifier(second)
        let outer = Unmanaged.passUnretained(firstIsOuter ? first : second)
        let inner = Unmanaged.passUnretained(firstIsOuter ? second : first)
        return outer._withUnsafeGuaranteedRef { outerOperation in
            outerOperation._update { outerState in
                inner._withUnsafeGuaranteedRef { innerOperation in
                    innerOperation._update { innerState in
                        firstIsOuter ? body(&outerState, &innerState) : body(&innerState, &outerState)
                    }
                }
            }
        }
    }
}

extension Operation {
    /// Makes this operation (already counted by its queue when it was admitted) wait for
    /// the queue's pending barrier: lists and registers the hidden edge, or uncounts it if
    /// the barrier already finished.
    final func _registerHiddenEdge(from barrier: Operation) {
        let link = _insertEdge(from: barrier) {
            Operation._withBothLocked(self, barrier) { mine, theirs -> Link in
                guard !theirs.phase.isFinishingOrFinished else {
                    mine.loseDependency()
                    return .listed
                }
                mine.appendHiddenDependency(barrier)
                theirs.addDependent(DependentReference(self))
                return .counted
            }
        }
        if link == .listed { _readinessChanged() }
    }

    /// Inserts the edge `dependency → self` into the graph, calling `link` once the edge
    /// is known to keep the graph acyclic (or, for a cycle Darwin allows, after warning).
    /// - Important: An edge that closes a cycle is a programmer error.
    private func _insertEdge(from dependency: Operation, link: () -> Link) -> Link {
        switch DependencyGraph.insert(from: dependency, to: self, register: link) {
        case .inserted(let linked):
            return linked
        case .cycle(let path, let alreadyLinked):
            let message = "addDependency: making \(_misuseName) depend on \(dependency._misuseName) closes a dependency cycle: \(Self._describeCycle(path))"
            if Operation.trapsOnDependencyCycles { Misuse.fail(message) }
            // Darwin allows it: the operations wait for each other until one is cancelled.
            Misuse.warn(message + "; they wait for each other until one of them is cancelled (set Operation.trapsOnDependencyCycles to stop here instead)", kind: .dependencyCycle)
            return alreadyLinked ?? link()
        }
    }

    /// A cycle as the user wrote it: `path` is the dependency, the dependent, …, the
    /// dependency, each waiting for the one before. Reversed, each depends on the next: the
    /// description starts at the new edge's dependency and ends with the new edge.
    private static func _describeCycle(_ path: [Operation]) -> String {
        let order = Array(path.reversed())
        return zip(order, order.dropFirst()).map { "\($0._shortName) depends on \($1._shortName)" }
            .joined(separator: "; ")
    }

    /// The operations waiting for this one (while it has not finished), as strong
    /// references (the caller filters out those that finished, and drops the array after
    /// any lock: the references made here may be the last).
    package final var _liveDependents: [Operation] {
        _update { state in DependentReference.retainedIfAlive(state.dependents) }
    }

    /// Takes this operation off the dependents lists of those of `dependencies` that have not
    /// finished: it no longer waits for them (it is going away, or finished first).
    final func _leaveDependentsLists(of dependencies: [Operation]) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        // By index: the list holds each dependency, so the loop takes no reference of its own.
        for index in dependencies.indices where !dependencies[index]._isFinishingFlag {
            dependencies[index]._update { $0.removeDependentEverywhere(at: me) }
        }
    }

    /// The unfinished operations this one waits for.
    final var _liveDependencies: [Operation] { _allDependencies.filter { !$0._isFinishing } }

    final var _hasLiveDependencies: Bool { _allDependencies.contains { !$0._isFinishing } }

    /// Every operation this one waits for or waited for, visible or hidden.
    private var _allDependencies: [Operation] { _update { $0.dependencies + $0.hiddenDependencies } }

    /// Whether the operation finished (its finish may still be being processed): it no
    /// longer waits for anything, and nothing needs to wait for it.
    package final var _isFinishing: Bool { _update { $0.phase.isFinishingOrFinished } }
}
