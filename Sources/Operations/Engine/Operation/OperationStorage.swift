// The operation as the holder of its lock: the one place that takes it. Every change of an
// operation's state is a step of the engine's, in this folder; the layers above read the
// state through `_readState`, which cannot change it.

extension Operation {
    /// Runs `body` under the operation's lock and publishes the state the getters report.
    /// Called only by the engine's steps (a scan of the sources checks it).
    ///
    /// Without Thread Sanitizer it takes the `Locked`'s mutex itself: `Locked.withLock`,
    /// defined in another file, is generic over the value and not inlined by an unoptimized
    /// build (the tests run in one), which then looks up `Mutex<OperationCore>`'s metadata
    /// at every section, a tenth of such a build's time. With the sanitizer, `withLock`
    /// tells it about the section.
    @inline(__always)
    final func _update<Result>(_ body: (inout OperationCore) -> Result) -> Result {
        guard threadSanitizerState.load(ordering: .relaxed) == ThreadSanitizerAnnotations.absent else {
            return core.withLock { state in
                let result = body(&state)
                visible.store(OperationCore.visibleFlags(of: &state), ordering: .releasing)
                return result
            }
        }
        return core.mutex.withLock { state in
            let result = body(&state)
            visible.store(OperationCore.visibleFlags(of: &state), ordering: .releasing)
            return result
        }
    }

    /// Reads the operation's state in one section of its lock (the value may be stale once
    /// returned). `body` runs no user code.
    @inline(__always)
    final func _readState<Result>(_ body: (OperationCore) -> Result) -> Result {
        guard threadSanitizerState.load(ordering: .relaxed) == ThreadSanitizerAnnotations.absent else {
            return core.withLock { state in body(state) }
        }
        return core.mutex.withLock { state in body(state) }
    }
}

// MARK: Settings

extension Operation {
    final func _setName(_ name: String?) {
        _update { $0.name = name }
    }

    /// Sets the priority; an operation in its queue's ready list moves to its new band (when
    /// the band it runs in changed).
    final func _setQueuePriority(_ priority: Operation.QueuePriority) {
        _update { $0.setQueuePriority(priority) }?._refile(self)
    }

    final func _setQualityOfService(_ quality: QualityOfService) {
        _update { $0.setQualityOfService(quality) }
    }

    final func _setThreadPriority(_ priority: Double) {
        _update { $0.threadPriority = priority }
    }

    /// Sets the completion block; returns the old one, for the caller to release after the lock.
    final func _swapCompletionBlock(_ block: (@Sendable () -> Void)?) -> (@Sendable () -> Void)? {
        _update { state in
            defer { state.completionBlock = block }
            return state.completionBlock
        }
    }

    /// Takes the operation's dependencies as it goes away (for the caller to leave their
    /// dependents lists and release them after the lock).
    final func _takeDependencies() -> (visible: [Operation], hidden: [Operation]) {
        _update { $0.takeDependencies() }
    }
}

// MARK: Starting and cancelling

extension Operation {
    /// What `start()` does: decided in one section when nobody observes the operation (a
    /// queue's worker claimed it, so it was ready); otherwise `isExecuting` is announced
    /// before the state changes (observers read the old value), and only when it will
    /// change: the decision is previewed on a copy first. When the work runs, the layer
    /// state is told in the same section, so that no event (a cancel) can be told before it.
    final func _decideStart() -> OperationCore.StartAction {
        if !_hasObservers {
            let claimed = _update { state -> OperationCore.StartAction? in
                guard case .dispatched = state.phase else { return nil }
                return Self._start(&state, reportedReady: nil)
            }
            if let claimed { return claimed }
            let reportedReady: Bool? = isCancelled ? nil : isReady
            return _update { Self._start(&$0, reportedReady: reportedReady) }
        }
        let byQueue = _readState { if case .dispatched = $0.phase { true } else { false } }
        let reportedReady: Bool? = byQueue || isCancelled ? nil : isReady
        let preview = _readState { state -> OperationCore.StartAction in
            var copy = state
            return copy.start(reportedReady: reportedReady)
        }
        let announced: Bool
        if case .run = preview { announced = true } else { announced = false }
        if announced { _announceWillChange("isExecuting") }
        let action = _update { Self._start(&$0, reportedReady: reportedReady) }
        if announced { _announceDidChange("isExecuting") }
        return action
    }

    private static func _start(_ state: inout OperationCore, reportedReady: Bool?) -> OperationCore.StartAction {
        let action = state.start(reportedReady: reportedReady)
        if case .run = action { state.extras?.layerState?.operationStarted() }
        return action
    }

    /// What `cancel()` does: nil when it changes nothing (cancelled already, or finished);
    /// else the queue to deliver the recorded events of, and whether the operation waits
    /// for its dependencies (or an `isReady` announcement) and becomes ready through its
    /// cancellation (one being checked notices the new readiness generation itself). A
    /// second cancel, or one after the finish, announces nothing; observers are told of
    /// `isCancelled` and `isReady` around the setting.
    final func _decideCancel() -> (queue: OperationQueue?, waits: Bool)? {
        if !_hasObservers {
            // Nothing to announce between deciding and setting: one lock section.
            return _update { state -> (queue: OperationQueue?, waits: Bool)? in
                guard state.requestCancellation(), state.completeCancellation() else { return nil }
                state.queue?._cancelled(self)
                state.extras?.layerState?.operationCancelled(reason: state.extras?.cancellationReason)
                return (state.queue, state.phase.kind == .waiting || state.phase.kind == .parked)
            }
        }
        guard _update({ state in
            guard state.requestCancellation() else { return false }
            state.extras?.layerState?.operationCancelled(reason: state.extras?.cancellationReason)
            return true
        }) else { return nil }
        _announceWillChange("isCancelled")
        _announceWillChange("isReady")
        let queue = _update { state -> OperationQueue? in
            // A finish that came meanwhile completed the cancellation (and recorded it).
            if state.completeCancellation() { state.queue?._cancelled(self) }
            return state.queue
        }
        _announceDidChange("isCancelled")
        _announceDidChange("isReady")
        return (queue, true)
    }
}

// MARK: Outcome and waits

extension Operation {
    /// Offers the reason of a cancellation about to be requested: kept only when the
    /// operation is not cancelled yet and no reason was offered (the first one wins).
    final func _offerCancellationReason(_ reason: any Error) {
        _update { state in
            if state.cancellation == .none, state.offeredCancellationReason == nil {
                state.offeredCancellationReason = reason
            }
        }
    }

    /// Records that the work failed with `error`, unless it finished or failed already.
    final func _offerFailure(_ error: any Error) {
        _update { state in
            if !state.phase.isFinishingOrFinished, state.failure == nil { state.failure = error }
        }
    }

    /// Adds the waiter `make` makes to the operation's finish waiters; nil, with nothing
    /// made, when the operation is finished.
    final func _addFinishWaiter<Kept>(_ make: () -> (FinishWaiter, Kept)) -> Kept? {
        _update { $0.addFinishWaiter(make) }
    }

    /// Adds the waiter `make` makes; when the operation is finished, returns its outcome
    /// instead (nothing made).
    final func _addFinishWaiterOrReadOutcome(_ make: () -> FinishWaiter) -> Operation.Outcome? {
        _update { state in
            state.addFinishWaiter { (make(), ()) } == nil ? state.outcome : nil
        }
    }

    /// Takes off the finish hook `id` if it has not run; returns it, to drop after the lock.
    final func _removeFinishWaiter(_ id: UInt64) -> [FinishWaiter] {
        _update { $0.removeFinishHook(id) }
    }

    /// The finish will be announced on `thread`: announcements made there meanwhile are
    /// made at once (see `OperationCore.finishes(on:)`).
    final func _announcesFinish(on thread: UInt64) {
        _update { $0.finishes(on: thread) }
    }

    /// Runs `body` under the operation's lock unless its work has started; returns whether
    /// it ran. `body` runs no user code.
    final func _unlessStarted(_ body: () -> Void) -> Bool {
        _update { state in
            switch state.phase {
            case .executing, .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished: return false
            default:
                body()
                return true
            }
        }
    }
}

// MARK: The layers' state

extension Operation {
    /// Where the operation stands, for a layer's state (read in the same section).
    struct Standing {
        var phase: OperationCore.Phase
        var isInQueue: Bool
    }

    /// Lends a layer its state kept with the operation (`OperationLayerState`), under the
    /// operation's lock: the one there, or, when there is none and `needed` says the
    /// operation, as it stands, keeps something, the one `make` makes (nil without `make`,
    /// or when not needed: an operation is given nothing it will not use). `body` changes
    /// only that state, and runs no user code.
    final func _withLayerState<Result>(
        making make: (() -> any OperationLayerState)?, when needed: (Standing) -> Bool = { _ in true },
        _ body: (_ state: (any OperationLayerState)?, _ standing: Standing) -> Result
    ) -> Result {
        _update { core in
            let standing = Standing(phase: core.phase, isInQueue: core.queue != nil)
            var layerState = core.extras?.layerState
            if layerState == nil, let make, needed(standing) {
                let made = make()
                core.extras(orNew: ()).layerState = made
                layerState = made
            }
            return body(layerState, standing)
        }
    }
}
