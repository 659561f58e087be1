// What the composition layer attaches to an operation: start hooks (timeouts, observers),
// observers, and what conditions know of the operations they contribute. Boxed in `OperationCore.extras`, nil for the operations that have none.

/// Attachments of the composition layer to one operation.
/// - Note: `@unchecked Sendable`: only reached through `OperationCore`, under the
///   operation's lock.
final class CompositionAttachments: @unchecked Sendable {
    /// Run once, on the starting thread, when `start()` begins running the work.
    var startHooks: [@Sendable () -> Void] = []
    /// Set when the start hooks ran: a hook added later runs at once.
    var started = false
    /// How many guarded operations wait for this one, which their conditions contributed.
    var conditionInterest = 0
    /// It joined its queue because a condition contributed it (see `ConditionGate`).
    var joinedForConditions = false
    /// Lifecycle observers, until the operation finished and they were told.
    var observers: [any OperationObserver] = []
    /// Events recorded (in the order they happened, under the lock) and not yet delivered.
    var observerEvents: [ObserverEvent] = []
    /// A thread is delivering events: others leave theirs to it, so that every observer
    /// gets them in order and never two at once.
    var isDeliveringEvents = false

    /// Records an event for the observers (none without observers).
    func post(_ event: ObserverEvent) {
        guard !observers.isEmpty else { return }
        observerEvents.append(event)
    }
}

/// What observers are told.
enum ObserverEvent {
    case started
    case cancelled((any Error)?)
    case produced(Operation)
    case finished(Operation.Outcome)
}

extension Operation {
    /// Runs `body` with the operation's extras (made on first use), under its lock.
    final func _withExtras<Result>(_ body: (CompositionAttachments) -> Result) -> Result {
        _update { state in
            if let extras = state.attachments { return body(extras) }
            let extras = CompositionAttachments()
            state.attachments = extras
            return body(extras)
        }
    }

    /// Runs `hook` when the work starts (on the starting thread, before `main()`); at once
    /// if it has started already; never if the operation finishes without starting.
    final func _onStart(_ hook: @escaping @Sendable () -> Void) {
        enum Decision { case added, runNow, never }
        let decision = _update { state -> Decision in
            if state.phase.isFinishingOrFinished { return .never }
            let extras = state.attachments ?? CompositionAttachments()
            state.attachments = extras
            if extras.started { return .runNow }
            extras.startHooks.append(hook)
            return .added
        }
        if decision == .runNow { hook() }
    }

    /// Called by `start()` before `main()`: takes the start hooks under the lock and runs
    /// them after it.
    final func _runStartHooks() {
        let hooks = _update { state -> [@Sendable () -> Void] in
            guard let extras = state.attachments else { return [] }
            extras.started = true
            defer { extras.startHooks = [] }
            return extras.startHooks
        }
        for hook in hooks { hook() }
    }
}
