// What the layers above attach to an operation: start hooks, taps told its lifecycle events
// in order, and values they keep with it. Boxed in the side box, nil for operations that
// have none.

/// An event of an operation's life, as taps receive it.
package enum LifecycleEvent: Sendable {
    case started
    case cancelled((any Error)?)
    case produced(Operation)
    case finished(Operation.Outcome)
}

/// Told an operation's lifecycle events: each once, in the order they happened, never two
/// at once for one operation, no lock held.
package protocol LifecycleTap: Sendable {
    func deliver(_ event: LifecycleEvent, of operation: Operation)
}

/// Attachments of the layers above to one operation.
/// - Note: `@unchecked Sendable`: only reached through `OperationCore`, under the
///   operation's lock.
final class OperationAttachments: @unchecked Sendable {
    /// Run once, on the starting thread, when `start()` begins running the work.
    var startHooks: [@Sendable () -> Void] = []
    /// Taps, until the operation finished and they were told.
    var taps: [any LifecycleTap] = []
    /// Events recorded (in the order they happened, under the lock) and not yet delivered.
    var events: [LifecycleEvent] = []
    /// A thread is delivering events: others leave theirs to it, so that every tap gets
    /// them in order and never two at once.
    var isDelivering = false
    /// Values the layers above keep with the operation, by type.
    var values: [ObjectIdentifier: AnyObject] = [:]
    /// What a cancelled start does instead of finishing at once (a group lets its
    /// children pass through first).
    var cancelledStart: (@Sendable () -> Void)?
    /// Where a task operation's body runs, when not on the global executor.
    var preferredExecutor: (any TaskExecutor)?

    /// Records an event for the taps (none without taps).
    func post(_ event: LifecycleEvent) {
        guard !taps.isEmpty else { return }
        events.append(event)
    }
}

extension OperationAttachments: OperationLayerState {
    func operationStarted() { post(.started) }

    func operationCancelled(reason: (any Error)?) { post(.cancelled(reason)) }

    func operationFinished(
        with outcome: @autoclosure () -> Operation.Outcome?
    ) -> (toTell: Bool, unused: [@Sendable () -> Void]) {
        defer { startHooks = [] }
        // The taps' finish, told with the observers, before any waiter wakes.
        var toTell = false
        if !taps.isEmpty, let outcome = outcome() {
            post(.finished(outcome))
            toTell = true
        }
        return (toTell, startHooks)
    }
}

extension OperationCore {
    /// The attachments, when a layer made them (the side box's layer state is always these).
    var attachments: OperationAttachments? {
        extras?.layerState.map { $0 as! OperationAttachments }
    }
}

extension Operation {
    /// Runs `body` with the operation's attachments (made on first use) and where it
    /// stands, under its lock (lent by the engine: see `_withLayerState`).
    private func _withAttachments<Result>(_ body: (OperationAttachments, Standing) -> Result) -> Result {
        _withAttachments(when: { _ in true }) { attachments, standing in body(attachments!, standing) }
    }

    /// Runs `body` with the operation's attachments, made first only when `needed` says
    /// the operation, as it stands, will keep something (nil otherwise), under its lock.
    private func _withAttachments<Result>(
        when needed: (Standing) -> Bool, _ body: (OperationAttachments?, Standing) -> Result
    ) -> Result {
        _withLayerState(making: { OperationAttachments() }, when: needed) { state, standing in
            body(state.map { $0 as! OperationAttachments }, standing)
        }
    }

    /// Runs `body` with the operation's attachments when a layer made them, under its lock.
    private func _withAttachmentsIfMade<Result>(_ body: (OperationAttachments?) -> Result) -> Result {
        _withLayerState(making: nil) { state, _ in body(state.map { $0 as! OperationAttachments }) }
    }

    /// The value of type `T` a layer keeps with this operation, made by `make` on first use;
    /// `body` runs with it under the operation's lock (no user code, no other lock).
    package final func _withLayerValue<T: AnyObject, Result>(
        _ make: () -> T, _ body: (T) -> Result
    ) -> Result {
        _withLayerValue(make, idle: { value, _ in body(value) })
    }

    /// As ``_withLayerValue(_:_:)``, and tells `body` whether the operation is in no queue and
    /// has not started, in the same lock section.
    package final func _withLayerValue<T: AnyObject, Result>(
        _ make: () -> T, idle body: (T, _ isIdle: Bool) -> Result
    ) -> Result {
        _withAttachments { attachments, standing in
            let value = attachments.values.layerValue(madeBy: make)
            var isIdle = false
            if case .idle = standing.phase, !standing.isInQueue { isIdle = true }
            return body(value, isIdle)
        }
    }

    /// Makes a cancelled start call `body` instead of finishing at once; `body` finishes the
    /// operation (`_finish(wasExecuting: false)`). Set in the subclass's `init`.
    package final func _setCancelledStart(_ body: @escaping @Sendable () -> Void) {
        _withAttachments { attachments, _ in attachments.cancelledStart = body }
    }

    /// What a cancelled start does, when a layer set it.
    final var _cancelledStart: (@Sendable () -> Void)? {
        guard _hasExtras else { return nil }
        return _withAttachmentsIfMade { $0?.cancelledStart }
    }

    /// Runs a task operation's body on `executor`. Set in the subclass's `init`.
    package final func _preferExecutor(_ executor: any TaskExecutor) {
        _withAttachments { attachments, _ in attachments.preferredExecutor = executor }
    }

    /// Runs `hook` when the work starts (on the starting thread, before `main()`); at once
    /// if it has started already (the operation's phase says so, whatever was attached
    /// then); never if the operation finishes without starting.
    package final func _onStart(_ hook: @escaping @Sendable () -> Void) {
        enum Decision { case added, runNow, never }
        // Attachments are made only for a hook that is kept (the work has not started).
        let beforeStart: (Standing) -> Bool = { standing in
            switch standing.phase {
            case .idle, .waiting, .checking, .parked, .ready, .dispatched: true
            default: false
            }
        }
        let decision = _withAttachments(when: beforeStart) { attachments, standing -> Decision in
            switch standing.phase {
            case .finishing, .announcing, .finished: return .never
            case .executing, .announcingBaseFinish, .awaitingFinish: return .runNow
            case .idle, .waiting, .checking, .parked, .ready, .dispatched:
                attachments!.startHooks.append(hook)
                return .added
            }
        }
        if decision == .runNow { hook() }
    }

    /// Called by `start()` before `main()`: takes the start hooks under the lock and runs
    /// them after it.
    final func _runStartHooks() {
        let hooks = _withAttachmentsIfMade { attachments -> [@Sendable () -> Void] in
            guard let attachments else { return [] }
            defer { attachments.startHooks = [] }
            return attachments.startHooks
        }
        for hook in hooks { hook() }
    }

    /// Adds a tap; false when the operation has finished (it is told nothing). A tap is told
    /// the events that happen after it was added (the start is posted in the section that
    /// starts the work; the finish when it has been processed, before any wait returns).
    @discardableResult
    package final func _addLifecycleTap(_ tap: some LifecycleTap) -> Bool {
        _withAttachments(when: { !$0.phase.isFinishingOrFinished }) { attachments, standing -> Bool in
            guard !standing.phase.isFinishingOrFinished else { return false }
            attachments!.taps.append(tap)
            return true
        }
    }

    /// Records `event` for the taps and delivers what is recorded.
    package final func _postLifecycleEvent(_ event: LifecycleEvent) {
        _withAttachmentsIfMade { $0?.post(event) }
        _deliverLifecycleEvents()
    }

    /// Delivers the recorded events, in order, unless another thread is doing so (it will
    /// deliver them too). Taps are dropped after the finish event, outside the lock.
    final func _deliverLifecycleEvents() {
        while true {
            let batch = _withAttachmentsIfMade { attachments -> (events: [LifecycleEvent], taps: [any LifecycleTap])? in
                guard let attachments, !attachments.isDelivering, !attachments.events.isEmpty
                else { return nil }
                attachments.isDelivering = true
                defer { attachments.events = [] }
                return (attachments.events, attachments.taps)
            }
            guard let batch else { return }
            var finished = false
            for event in batch.events {
                for tap in batch.taps { tap.deliver(event, of: self) }
                if case .finished = event { finished = true }
            }
            let released = _withAttachmentsIfMade { attachments -> [any LifecycleTap] in
                guard let attachments else { return [] }
                attachments.isDelivering = false
                guard finished else { return [] }
                defer { attachments.taps = [] }
                return attachments.taps
            }
            _ = released
        }
    }
}
