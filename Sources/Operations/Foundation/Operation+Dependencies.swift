// The public switch for dependency cycles (the edges themselves are the engine's:
// `Engine/Operation/OperationStorage+Dependencies.swift`).

extension OperationExtensions where Self: Operation {
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
