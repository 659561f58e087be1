// The engine's hooks for a queue that the observation layer implements (see `QueueLayerHooks`).

extension OperationQueue {
    final func _membershipWillChange() {
        _announceWillChange("operationCount")
        _announceWillChange("operations")
    }

    final func _membershipDidChange() {
        _announceDidChange("operationCount")
        _announceDidChange("operations")
    }

    final func _settingWillChange(_ key: String) { _announceWillChange(key) }

    final func _settingDidChange(_ key: String) { _announceDidChange(key) }

    /// The `started` event, numbered in the order the operation's events happen.
    final func _starts(_ operation: Operation, slot: Int?) {
        _record(.started, operation, slot: slot)
    }

    final func _cancelled(_ operation: Operation) {
        _record(.cancelled, operation)
    }

    /// The `cancelled` event a finish completed, then the `finished` one.
    final func _finished(_ operation: Operation, completedCancellation: Bool, wasCancelled: Bool) {
        if completedCancellation { _record(.cancelled, operation) }
        _record(.finished(wasCancelled: wasCancelled), operation)
    }

    @inline(__always)
    final func _eventsRecorded() { _deliverEvents() }
}
