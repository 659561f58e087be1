extension Operation {
    /// The engine's hook when the operation's gates let it go: its readiness changed for
    /// whoever observes `isReady` (the change itself is then handled by the engine).
    final func _gatesOpened() {
        guard _hasObservers else { return }
        _announceWillChange("isReady")
        _announceDidChange("isReady")
    }
}
