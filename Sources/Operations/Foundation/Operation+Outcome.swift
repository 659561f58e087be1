import Synchronization

// How an operation ended, beyond Foundation's `isFinished`/`isCancelled`: for the layers
// above (async bodies, typed results, groups, retry) and for anyone who asks.

extension Operation {
    /// How an operation ended.
    ///
    /// Foundation's API is unchanged by it: dependents still run after a dependency that
    /// was cancelled or failed.
    public enum Outcome: Sendable {
        /// It ran (or was finished by its subclass) and reported no error.
        case succeeded
        /// It was cancelled before it finished; `reason` is what ``Operation/cancel(with:)``
        /// gave, nil for a plain ``Operation/cancel()``.
        case cancelled(reason: (any Error)?)
        /// It reported an error.
        case failed(any Error)

        /// Whether the operation succeeded.
        public var isSucceeded: Bool {
            if case .succeeded = self { return true }
            return false
        }

        /// Whether the operation failed (reported an error; not cancelled).
        public var isFailed: Bool {
            if case .failed = self { return true }
            return false
        }

        /// Whether the operation was cancelled.
        public var isCancelled: Bool {
            if case .cancelled = self { return true }
            return false
        }

        /// The reason of a cancellation or the error of a failure.
        public var error: (any Error)? {
            switch self {
            case .succeeded: nil
            case .cancelled(let reason): reason
            case .failed(let error): error
            }
        }
    }
}

extension OperationExtensions where Self: Operation {
    /// How the operation ended; nil until it has finished.
    ///
    /// A cancellation that happened before the finish wins over a reported failure.
    public var outcome: Operation.Outcome? { _readState { $0.outcome } }

    /// Cancels the operation, recording `reason` as the cause (see ``Operation/Outcome``);
    /// with `nil`, a plain ``Operation/cancel()``.
    ///
    /// Calls ``Operation/cancel()``, so a subclass's override runs as for a plain cancel.
    /// The first cancellation wins: a later call, or one after the finish, changes nothing.
    public func cancel(with reason: (any Error)?) {
        if let reason {
            _offerCancellationReason(reason)
        }
        cancel()
    }
}

extension Operation {
    /// Records the error the operation ends with; its outcome is ``Outcome/failed(_:)``
    /// unless it was cancelled. For layers above (an async body that threw).
    package final func _recordFailure(_ error: any Error) {
        _offerFailure(error)
    }

    /// Blocks until finished, reporting a stall once through `report`.
    final func _waitUntilFinished(report: inout StallReport, targets: () -> [Operation]) {
        // From its own completion block, or from the start() that finished it (whose worker
        // runs the block once that start() returns): it has finished, and the rest waits for
        // this very thread.
        if CompletionBlockScope.isRunning(for: self) || WorkerContext.keepsFinishAfterStart(of: self) { return }
        let semaphore = _addFinishWaiter { () -> (FinishWaiter, DispatchSemaphore) in
            let semaphore = DispatchSemaphore(value: 0)
            return (.thread(semaphore), semaphore)
        }
        guard let semaphore else { return }
        report.wait(on: semaphore, targets: targets)
    }

    /// Runs `hook` once the operation has finished (after its completion block), on the
    /// thread that finished it; at once, on this thread, if it already has. Returns an
    /// identifier for ``_removeFinishHook(_:)``, or nil when it ran at once.
    ///
    /// `role` says whom the hook serves: whether it makes the operation wanted (see
    /// `WaitGraph.isWanted(_:)`).
    @discardableResult
    package final func _onFinish(for role: FinishHookRole, _ hook: @escaping @Sendable (Outcome) -> Void) -> UInt64? {
        let id = Operation._nextHookID.add(1, ordering: .relaxed).newValue
        let finished = _addFinishWaiterOrReadOutcome { .hook(id: id, role, hook) }
        guard let finished else { return id }
        hook(finished)
        return nil
    }

    /// Removes a hook that has not run (a waiting task was cancelled). The hook is
    /// released after the lock.
    package final func _removeFinishHook(_ id: UInt64) {
        let removed = _removeFinishWaiter(id)
        _ = removed
    }

    static let _nextHookID = Atomic<UInt64>(0)

    /// How many waits (threads, tasks, hooks) wait for the operation to finish: for tests
    /// that must know a wait has begun.
    package final var _finishWaiterCount: Int { _readState { $0.finishWaiters.count } }
}
