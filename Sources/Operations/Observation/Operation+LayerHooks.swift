// The engine's hooks that the observation layer implements (see `OperationLayerHooks`).

extension Operation {
    /// The operation joined `queue`: its first event there.
    final func _joined(_ queue: OperationQueue) {
        queue._record(.enqueued, self)
    }

    /// The operation's gates let it go: its readiness changed for whoever observes
    /// `isReady` (the change itself is then handled by the engine).
    final func _gatesOpened() {
        guard _hasObservers else { return }
        _announceWillChange("isReady")
        _announceDidChange("isReady")
    }
}
