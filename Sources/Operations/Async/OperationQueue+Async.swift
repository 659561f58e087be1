// Queues from async code: waiting without blocking, adding async work, awaiting a result.

extension OperationQueueExtensions where Self: OperationQueue {
    /// Suspends until the queue has no operations (including ones added while waiting, and
    /// asynchronous ones) and their completion blocks have run.
    ///
    /// The `async` form of ``OperationQueue/waitUntilAllOperationsAreFinished()``; an `async`
    /// context picks it. Returns early if the waiting task is cancelled (the operations are
    /// not cancelled). Reports a stall once, as the blocking form does.
    public func waitUntilAllOperationsAreFinished() async {
        let signal = AsyncSignal<Bool>()
        let id = Operation._nextHookID.add(1, ordering: .relaxed).newValue
        guard _waitForEmptiness(allBut: 0, { (.hook(id: id) { signal.resume(with: true) }, ()) }) != nil else { return }
        let finished = await BlockedWaits.during(awaiting: operations) {
            let watched = AsyncStallWatch.shared.begin(.awaitWaitUntilAllOperationsAreFinished(self))
            let finished = await signal.value(orOnCancel: false)
            AsyncStallWatch.shared.end(watched)
            return finished
        }
        if finished { return }
        // Cancelled: take the hook out (dropped after the lock).
        let removed = _stopWaitingForEmptiness(id: id)
        _ = removed
    }

    /// Wraps an `async` closure in an ``AsyncBlockOperation`` and adds it; returns the
    /// operation, whose ``ValueOperation/value`` can be awaited.
    ///
    /// Like ``OperationQueue/addOperation(_:)-(()->Void)``, the operation takes the queue's
    /// quality of service when one was set, and goes through
    /// ``OperationQueue/addOperation(_:)-(Operation)`` (a subclass's override sees it).
    // Inlinable: specialized in the caller, the operation's generic class costs no runtime
    // metadata lookup per call.
    @inlinable @discardableResult
    public func addOperation<Success: Sendable>(
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> AsyncBlockOperation<Success> {
        let operation = AsyncBlockOperation(body)
        _addMade(operation)
        return operation
    }

    /// Adds `operation` and awaits its value: the shortcut for `addOperation` + `value`.
    ///
    /// Unlike awaiting ``ValueOperation/value``, cancelling the awaiting task **cancels the
    /// operation** (nobody else was given it), and the call returns once it has finished.
    public func perform<Success: Sendable>(_ operation: ValueOperation<Success>) async throws -> Success {
        addOperation(operation)
        let outcome = await withTaskCancellationHandler {
            await operation._outcome()
        } onCancel: {
            operation.cancel()
        }
        // The awaiting task was cancelled: the operation was cancelled too; wait for it to
        // finish so that nothing of it outlives the call.
        if outcome == nil { _ = await Task { await operation._outcome() }.value }
        return try operation.result!.get()
    }

    /// Runs `body` as an ``AsyncBlockOperation`` on this queue and returns its value:
    /// bounded by the queue's limit, ordered by its priorities. Cancelling the awaiting task
    /// cancels the operation.
    public func perform<Success: Sendable>(
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) async throws -> Success {
        let operation = AsyncBlockOperation(body)
        operation.qualityOfService = QualityOfService(Task.currentPriority)
        return try await perform(operation)
    }
}
