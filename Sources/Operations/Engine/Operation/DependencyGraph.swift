import Synchronization

/// Keeps the dependency graph acyclic: every operation has a position in a topological
/// order of the unfinished edges, maintained incrementally (Pearce and Kelly, "A Dynamic
/// Topological Sort Algorithm for Directed Acyclic Graphs", 2006).
///
/// Operations get increasing positions when created, so an edge whose dependency was
/// created first (chains, fan-out, layers built in order) agrees with the order and costs
/// two atomic loads, without a lock. Any other edge is handled under a lock: a dependency
/// that waits for nothing and already has dependents moves before every operation (a root
/// made after its leaves: the next edges to older leaves then agree); else a dependent that
/// nothing waits for moves after every operation (a sink made before its sources, likewise);
/// else a dependency that waits for nothing moves first. Otherwise the edge searches only
/// the region of the order between its two ends: forward from the dependent for the
/// dependency (reaching it means a cycle), and backward from the dependency; the nodes
/// found are given each other's positions so that the new edge agrees.
///
/// An edge that agreed when it was checked lock-free is re-checked under the lock if a
/// reordering ran meanwhile (`generation` changed): two edges that agree with one order
/// cannot close a cycle between them, so only a reordering can race with it.
///
/// Edges out of finished operations are not part of the graph: they can no longer block.
enum DependencyGraph {
    /// `Operation.trapsOnDependencyCycles`.
    static let trapsOnCycles = Atomic<Bool>(ProcessInfo.processInfo.environment["OPERATIONS_TRAP_ON_DEPENDENCY_CYCLES"] == "1")

    /// Positions for new operations, and for one moved after every other.
    static let nextPosition = Atomic<Int>(0)

    /// Positions for an operation moved before every other (below every position handed out).
    private static let firstPosition = Atomic<Int>(0)

    /// Odd while a reordering runs; bumped twice by each.
    private static let generation = Atomic<UInt64>(0)

    /// Serializes the reorderings.
    private static let reordering = Locked(())

    enum Insertion<Registered: Sendable>: Sendable {
        /// `registered` is what `register` returned.
        case inserted(Registered)
        /// The edge closes this cycle: the dependency, the dependent, …, the dependency.
        /// `registered` is what `register` returned if it was already called (the edge was
        /// checked again after a concurrent reordering), nil if it was not.
        case cycle([Operation], registered: Registered?)
    }

    /// Inserts the edge `dependency → dependent` (the dependent waits), calling `register`
    /// (which records the dependent in the dependency's list) once the edge is known to
    /// keep the graph acyclic.
    static func insert<Registered: Sendable>(
        from dependency: Operation, to dependent: Operation, register: () -> Registered
    ) -> Insertion<Registered> {
        let seen = generation.load(ordering: .acquiring)
        if seen & 1 == 0, dependency._position.load(ordering: .relaxed) < dependent._position.load(ordering: .relaxed) {
            let registered = register()
            if generation.load(ordering: .acquiring) == seen { return .inserted(registered) }
            // A reordering ran meanwhile: check the (already registered) edge under the lock.
            let (insertion, visited) = reordering.withLock { _ -> (Insertion<Registered>, [[Operation]]) in
                var visited: [[Operation]] = []
                let insertion: Insertion<Registered> =
                    reorder(from: dependency, to: dependent, visited: &visited).map { .cycle($0, registered: registered) }
                    ?? .inserted(registered)
                return (insertion, visited)
            }
            // The references the search took are dropped here, after the lock: one may be
            // the last, and an operation's deinit releases its dependencies (user code).
            _ = consume visited
            return insertion
        }
        let (insertion, visited) = reordering.withLock { _ -> (Insertion<Registered>, [[Operation]]) in
            var visited: [[Operation]] = []
            if let cycle = reorder(from: dependency, to: dependent, visited: &visited) {
                return (.cycle(cycle, registered: nil), visited)
            }
            return (.inserted(register()), visited)
        }
        _ = consume visited
        return insertion
    }

    /// Moves `operation`, which waits for nothing, before every operation; no cycle.
    private static func moveFirst(_ operation: Operation) -> [Operation]? {
        operation._position.store(firstPosition.subtract(1, ordering: .relaxed).newValue, ordering: .relaxed)
        return nil
    }

    /// Moves `operation`, which nothing waits for, after every operation; no cycle.
    private static func moveLast(_ operation: Operation) -> [Operation]? {
        operation._position.store(nextPosition.add(1, ordering: .relaxed).newValue, ordering: .relaxed)
        return nil
    }

    /// Makes the order agree with the edge `dependency → dependent`, or returns the cycle
    /// it closes. Called with the lock held; every reference the search takes is kept in
    /// `visited`, for the caller to drop after the lock.
    private static func reorder(from dependency: Operation, to dependent: Operation, visited: inout [[Operation]]) -> [Operation]? {
        let lower = dependent._position.load(ordering: .relaxed)
        let upper = dependency._position.load(ordering: .relaxed)
        guard upper >= lower else { return nil }
        generation.add(1, ordering: .acquiringAndReleasing)
        defer { generation.add(1, ordering: .acquiringAndReleasing) }
        // The dependency waits for nothing and others wait for it already (a root made
        // after its leaves, from its second edge on): it moves before every operation, so
        // that the edges to the other leaves made before it agree without a reordering.
        // Else nothing waits for the dependent (a sink made before its sources): it moves
        // after every operation, for the same reason. Else the dependency waits for
        // nothing: it moves before every operation. Empty lists, the common case, are told
        // without taking references; lists of finished operations only, with them.
        let (dependencyWaits, dependencyIsWaitedFor) = dependency._update {
            (!$0.dependencies.isEmpty || $0.hasHiddenDependencies, !$0.dependents.isEmpty)
        }
        if !dependencyWaits && dependencyIsWaitedFor { return moveFirst(dependency) }
        if dependent._update({ $0.dependents.isEmpty }) { return moveLast(dependent) }
        if !dependencyWaits { return moveFirst(dependency) }
        let dependentsOfDependent = dependent._liveDependents
        visited.append(dependentsOfDependent)
        if !dependentsOfDependent.contains(where: { !$0._isFinishing }) { return moveLast(dependent) }
        if !dependency._hasLiveDependencies { return moveFirst(dependency) }
        // Forward from the dependent, through positions up to the dependency's.
        var forward: [Operation] = []
        var parent: [ObjectIdentifier: Operation] = [:]
        var stack = [dependent]
        var seen: Set<ObjectIdentifier> = [ObjectIdentifier(dependent)]
        while let node = stack.popLast() {
            if node === dependency {
                var path: [Operation] = []
                var cursor: Operation? = parent[ObjectIdentifier(dependency)]
                while let step = cursor { path.append(step); cursor = parent[ObjectIdentifier(step)] }
                return [dependency] + Array(path.reversed()) + [dependency]
            }
            forward.append(node)
            let dependents = node._liveDependents
            visited.append(dependents)
            for next in dependents where !next._isFinishing && next._position.load(ordering: .relaxed) <= upper {
                if seen.insert(ObjectIdentifier(next)).inserted {
                    parent[ObjectIdentifier(next)] = node
                    stack.append(next)
                }
            }
        }
        // Backward from the dependency, through positions down to the dependent's.
        var backward: [Operation] = []
        stack = [dependency]
        seen = [ObjectIdentifier(dependency)]
        while let node = stack.popLast() {
            backward.append(node)
            let dependencies = node._liveDependencies
            visited.append(dependencies)
            for previous in dependencies where previous._position.load(ordering: .relaxed) >= lower {
                if seen.insert(ObjectIdentifier(previous)).inserted { stack.append(previous) }
            }
        }
        // The backward set takes the lowest of the positions involved, in its own order,
        // then the forward set: the new edge now agrees with the order.
        let ordered =
            backward.sorted { $0._position.load(ordering: .relaxed) < $1._position.load(ordering: .relaxed) }
            + forward.sorted { $0._position.load(ordering: .relaxed) < $1._position.load(ordering: .relaxed) }
        let positions = ordered.map { $0._position.load(ordering: .relaxed) }.sorted()
        for (node, position) in zip(ordered, positions) { node._position.store(position, ordering: .relaxed) }
        return nil
    }
}
