/// The scopes that the `async` bodies of one queue's operations run inside, guarded by the
/// queue's `taskScopes` lock.
struct TaskScopes {
    typealias Scope = @Sendable (Operation, () async -> Void) async -> Void

    var scopes: [(id: UInt64, scope: Scope)] = []
    var nextID: UInt64 = 1
}

extension OperationQueue {
    /// Runs the `async` body of every ``TaskOperation`` this queue starts from now on inside
    /// `scope`: the scope receives the operation and the body, and must call the body once.
    ///
    /// For task-local values a body should see, such as a tracing context
    /// (`ServiceContext.withValue(context) { await body() }`). Scopes registered later run
    /// inside earlier ones. Keep the returned subscription; the scope stops applying when it
    /// is cancelled or released.
    /// - Note: While no scope is registered, starting an `async` body costs one atomic load.
    public func addTaskScope(
        _ scope: @escaping @Sendable (Operation, () async -> Void) async -> Void
    ) -> OperationEventSubscription {
        let id = taskScopes.withLock { state in
            defer { state.nextID += 1 }
            state.scopes.append((state.nextID, scope))
            hasTaskScopes.store(true, ordering: .releasing)
            return state.nextID
        }
        return OperationEventSubscription(queue: self, id: id, kind: .taskScope)
    }

    final func _removeTaskScope(_ id: UInt64) {
        var removed = taskScopes.withLock { state in
            let removed = state.scopes.filter { $0.id == id }
            state.scopes.removeAll { $0.id == id }
            if state.scopes.isEmpty { hasTaskScopes.store(false, ordering: .releasing) }
            return removed
        }
        // Dropped after the lock: its captures' deinit is user code.
        removed.removeAll()
    }

    /// The scopes an `async` body started now runs inside (none, without a lock, usually).
    final var _currentTaskScopes: [TaskScopes.Scope] {
        guard hasTaskScopes.load(ordering: .acquiring) else { return [] }
        return taskScopes.withLock { $0.scopes.map(\.scope) }
    }
}

/// Runs `body` inside `scopes`, the first outermost.
func _runInside(
    _ scopes: ArraySlice<TaskScopes.Scope>, of operation: Operation, _ body: () async -> Void
) async {
    guard let scope = scopes.first else {
        await body()
        return
    }
    await scope(operation) { await _runInside(scopes.dropFirst(), of: operation, body) }
}
