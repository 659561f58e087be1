/// The hooks of ``OperationQueue/addEnqueueHook(_:)`` of one queue.
typealias EnqueueHooks = HookList<@Sendable (Operation) -> Void>

extension OperationQueueExtensions where Self: OperationQueue {
    /// Calls `hook` with each operation added to this queue, on the thread that adds it,
    /// before it joins the queue (and before its enqueued event), with no lock held.
    ///
    /// For what only the adding thread or task knows: the tracing adapter captures the
    /// `ServiceContext` current where an operation was added. Keep the returned
    /// subscription; the hook stops when it is cancelled or released (an add under way on
    /// another thread checks before calling it: after `cancel()` returns, that add may still
    /// call it once).
    /// - Note: While no hook is registered, adding costs one atomic load more.
    public func addEnqueueHook(_ hook: @escaping @Sendable (Operation) -> Void) -> OperationEventSubscription {
        let id = enqueueHooks.withLock { hooks in
            hasEnqueueHooks.store(true, ordering: .releasing)
            return hooks.add(hook)
        }
        return OperationEventSubscription(queue: self, id: id) { $0._removeEnqueueHook($1) }
    }
}

extension OperationQueue {
    final func _removeEnqueueHook(_ id: UInt64) {
        var removed = enqueueHooks.withLock { hooks in
            defer { if hooks.isEmpty { hasEnqueueHooks.store(false, ordering: .releasing) } }
            return hooks.remove(id)
        }
        // Dropped after the lock: its captures' deinit is user code.
        removed.removeAll()
    }

    /// Runs the enqueue hooks for `operations` (called by `_add` before its lock).
    @inline(__always)
    final func _runEnqueueHooks(_ operations: some Collection<Operation>) {
        guard hasEnqueueHooks.load(ordering: .acquiring) else { return }
        let hooks = enqueueHooks.withLock { $0.registrations }
        for operation in operations {
            for hook in hooks where hook.isActive { hook.hook(operation) }
        }
    }
}
