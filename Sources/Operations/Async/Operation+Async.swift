// Awaiting operations without blocking a thread.

extension OperationExtensions where Self: Operation {
    /// Suspends until the operation has finished and its completion block has run.
    ///
    /// The `async` form of ``Operation/waitUntilFinished()``: in an `async` context the
    /// compiler picks this one, so code moved into async functions stops blocking its thread.
    ///
    /// Returns early if the waiting task is cancelled; the operation itself is **not**
    /// cancelled (others may be waiting for it). Awaiting from a task of higher priority
    /// escalates the operation (and what it waits for).
    ///
    /// When the operation cannot make progress (see ``OperationDiagnostic/stallReportDelay``),
    /// says so once, through ``OperationDiagnostic/handler``, and goes on waiting.
    public func waitUntilFinished() async {
        _ = await _outcome()
    }
}

extension Operation {
    /// Waits for the outcome; nil when the waiting task was cancelled first. The finish
    /// hook is removed when the wait ends early, so nothing is left behind.
    package final func _outcome() async -> Outcome? {
        if _isFinishingFlag, let outcome = _readState({ state -> Outcome? in
            if case .finished = state.phase { return state.outcome }
            return nil
        }) {
            return outcome
        }
        let signal = AsyncSignal<Outcome?>()
        let hook = _onFinish(for: .caller) { signal.resume(with: $0) }
        // Inside an `async` body, the body waits for this one (for stall reports).
        return await BlockedWaits.during(awaiting: hook == nil ? [] : [self]) {
            await _awaitOutcome(signal: signal, hook: hook)
        }
    }

    private func _awaitOutcome(signal: AsyncSignal<Outcome?>, hook: UInt64?) async -> Outcome? {
        // Watched only when it will suspend (no hook: it finished meanwhile).
        let watched = hook.flatMap { _ in AsyncStallWatch.shared.begin(.awaitOperation(self)) }
        defer { AsyncStallWatch.shared.end(watched) }
        let outcome: Outcome?
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            // A waiter raised while it waits raises the operation too. Its priority is read
            // once the handler is in place, so that no raise falls between the two.
            outcome = await withTaskPriorityEscalationHandler {
                self._escalate(toPriorityOf: Task.currentPriority)
                return await signal.value(orOnCancel: nil)
            } onPriorityEscalated: { _, raised in
                self._escalate(toPriorityOf: raised)
            }
        } else {
            _escalate(toPriorityOf: Task.currentPriority)
            outcome = await signal.value(orOnCancel: nil)
        }
        if outcome == nil, let hook { _removeFinishHook(hook) }
        return outcome
    }

    /// Escalates the operation when a task of higher priority than it runs at waits for it.
    final func _escalate(toPriorityOf priority: TaskPriority) {
        let quality = QualityOfService(priority)
        let current = _readState { $0.threadQuality } ?? .default
        if quality.rank > current.rank { _escalate(to: quality) }
    }
}
