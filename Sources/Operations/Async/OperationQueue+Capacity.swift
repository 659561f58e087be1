// Back-pressure: a bound on a queue's unfinished operations that producers can wait on.

extension OperationQueueExtensions where Self: OperationQueue {
    /// The most unfinished operations (waiting or running) that ``enqueue(_:)->Added`` lets the
    /// queue hold; nil (the default) for no bound.
    ///
    /// A producer that adds with ``enqueue(_:)->Added`` suspends while the queue is full, so a
    /// producer of a million items holds only `capacity` operations in memory. The
    /// Foundation methods (``OperationQueue/addOperation(_:)-(Operation)``,
    /// ``OperationQueue/addOperations(_:waitUntilFinished:)``) never wait and ignore it, but
    /// what they add counts.
    /// - Important: A capacity below 1 is a programmer error.
    public var capacity: Int? {
        get { _snapshot.capacity }
        set {
            if let newValue, newValue < 1 {
                Misuse.fail("capacity of \(_misuseName) set to \(newValue); it must be at least 1, or nil for no bound")
            }
            let admitted = _setCapacity(newValue)
            for producer in admitted { producer.wake() }
        }
    }

    /// Adds `operation` once the queue holds fewer than ``capacity`` unfinished operations,
    /// suspending the caller meanwhile (at once when there is no bound). Producers waiting
    /// for room add in the order they came.
    ///
    /// Returns the operation, for chaining (`try await queue.enqueue(op).value`).
    /// When none of the queue's operations can make progress (so no room will come; see
    /// ``OperationDiagnostic/stallReportDelay``), says so once, through
    /// ``OperationDiagnostic/handler``, and goes on waiting.
    /// - Throws: `CancellationError` when the calling task is cancelled while it waits; the
    ///   operation was not added then.
    @discardableResult
    public func enqueue<Added: Operation>(_ operation: Added) async throws -> Added {
        try await _waitForPlace()
        _add(CollectionOfOne(operation), usingReservedPlace: true)
        return operation
    }

    /// Wraps an `async` closure in an ``AsyncBlockOperation`` and adds it as
    /// ``enqueue(_:)->Added`` does; returns the operation.
    @discardableResult
    public func enqueue<Success: Sendable>(
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) async throws -> AsyncBlockOperation<Success> {
        let operation = AsyncBlockOperation(body)
        try await _waitForPlace()
        _addFresh(operation, usingReservedPlace: true)
        return operation
    }
}

extension OperationQueue {
    /// Returns with a place reserved for the caller, or throws when cancelled first.
    fileprivate func _waitForPlace() async throws {
        let signal = AsyncSignal<Bool>()
        let id = Operation._nextHookID.add(1, ordering: .relaxed).newValue
        let placed = _takePlace(orWait: .hook(id: id) { signal.resume(with: true) })
        if placed { return }
        // Room comes only as the queue's operations finish.
        let watched = AsyncStallWatch.shared.begin(.awaitEnqueue(self))
        let roomCame = await signal.value(orOnCancel: false)
        AsyncStallWatch.shared.end(watched)
        if roomCame { return }
        // Cancelled: leave the line, or give back the place that came meanwhile.
        let departure = _producerLeft(id: id)
        for producer in departure.admitted { producer.wake() }
        throw CancellationError()
    }
}
