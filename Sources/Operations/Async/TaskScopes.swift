/// The scopes that the `async` bodies of one queue's operations run inside, guarded by the
/// queue's `taskScopes` lock.
typealias TaskScopes = HookList<TaskScope>

/// A scope of ``OperationQueue/addTaskScope(_:)``.
typealias TaskScope = @Sendable (Operation, () async -> Void) async -> Void

extension OperationQueueExtensions where Self: OperationQueue {
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
        let id = taskScopes.withLock { scopes in
            hasTaskScopes.store(true, ordering: .releasing)
            return scopes.add(scope)
        }
        return OperationEventSubscription(queue: self, id: id) { $0._removeTaskScope($1) }
    }
}

extension OperationQueue {
    final func _removeTaskScope(_ id: UInt64) {
        var removed = taskScopes.withLock { scopes in
            defer { if scopes.isEmpty { hasTaskScopes.store(false, ordering: .releasing) } }
            return scopes.remove(id)
        }
        // Dropped after the lock: its captures' deinit is user code.
        removed.removeAll()
    }

    /// The scopes an `async` body started now runs inside (none, without a lock, usually).
    final var _currentTaskScopes: [TaskScope] {
        guard hasTaskScopes.load(ordering: .acquiring) else { return [] }
        return taskScopes.withLock { $0.registrations.map(\.hook) }
    }
}

/// Runs `body` inside `scopes`, the first outermost.
func _runInside(
    _ scopes: ArraySlice<TaskScope>, of operation: Operation, _ body: () async -> Void
) async {
    guard let scope = scopes.first else {
        await body()
        return
    }
    await scope(operation) { await _runInside(scopes.dropFirst(), of: operation, body) }
}
