// Keys: coalescing work that is already in flight, reprioritising it, and cancelling it
// only when nobody wants it any more.

@_spi(Engine) import Operations

/// A key of `addOperation(forKey:_:)`, type-erased.
/// - Note: `@unchecked Sendable`: made only from `Hashable & Sendable` values.
struct OperationKey: Hashable, @unchecked Sendable {
    let base: AnyHashable

    init(_ key: some Hashable & Sendable) { base = AnyHashable(key) }
}

/// An operation under a key of a queue, and how many callers want it.
struct KeyedEntry {
    var operation: Operation
    var interest: Int

    /// Whether the operation still takes callers: neither finishing nor cancelled (by its
    /// queue's `cancelAllOperations()`, its own `cancel()`, anyone's). A cancelled one ends
    /// without the value the next caller asks for; that caller gets fresh work.
    var isInFlight: Bool { !operation._isFinishingFlag && !operation._isCancelledFlag }
}

extension OperationQueueExtensions where Self: OperationQueue {
    /// Adds the operation `make` returns under `key`, unless an operation under the same
    /// key is still pending or running in this queue: then `make` is not called and that
    /// operation is returned (await its `ValueOperation.value`: every caller gets the same
    /// value).
    ///
    /// ```swift
    /// let thumbnail = queue.addOperation(forKey: url) { AsyncBlockOperation { try await load(url) } }
    /// ```
    ///
    /// Each call counts as one interest in the operation; ``cancelOperation(forKey:)``
    /// withdraws one and cancels the operation only when none is left. The key is free
    /// again once the operation finishes or is cancelled (by key or otherwise): a
    /// cancelled operation takes no new callers; the next call adds fresh work.
    /// - Important: The operation under a key must be of the type the caller expects; a
    ///   mismatch is a programmer error.
    @discardableResult
    public func addOperation<Success: Sendable>(
        forKey key: some Hashable & Sendable, _ make: () -> ValueOperation<Success>
    ) -> ValueOperation<Success> {
        let operation = _addOperation(forKey: OperationKey(key), make)
        guard let typed = operation as? ValueOperation<Success> else {
            Misuse.fail("addOperation(forKey:): the operation under key \(key) in \(_misuseName) is \(operation._misuseName), not a ValueOperation<\(Success.self)>")
        }
        return typed
    }

    /// Adds the operation `make` returns under `key`, or returns the one in flight under it
    /// (see ``addOperation(forKey:_:)-(_,()->ValueOperation<Success>)``).
    @discardableResult
    public func addOperation(forKey key: some Hashable & Sendable, _ make: () -> Operation) -> Operation {
        _addOperation(forKey: OperationKey(key), make)
    }

    /// Runs `body` under `key` and returns its value, joining the operation already in
    /// flight under that key if there is one. Cancelling the awaiting task withdraws its
    /// interest: the operation is cancelled only if nobody else wants it.
    public func perform<Success: Sendable>(
        forKey key: some Hashable & Sendable,
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) async throws -> Success {
        let operation: ValueOperation<Success> = addOperation(forKey: key) { AsyncBlockOperation(body) }
        guard let outcome = await operation._outcome() else {
            // Its own interest: the key may hold newer work by now, which others asked for.
            _withdrawInterest(forKey: OperationKey(key), in: operation)
            throw CancellationError()
        }
        _ = outcome
        return try operation.result!.get()
    }

    /// The operation pending or running under `key`, if any (not one that was cancelled).
    public func operation(forKey key: some Hashable & Sendable) -> Operation? {
        let key = OperationKey(key)
        return _keyed.entries.withLock { entries in
            guard let entry = entries[key], entry.isInFlight else { return nil }
            return entry.operation
        }
    }

    /// Withdraws one interest in the operation under `key`; when nobody else wants it,
    /// cancels it and frees the key. Returns whether it cancelled.
    @discardableResult
    public func cancelOperation(forKey key: some Hashable & Sendable) -> Bool {
        _withdrawInterest(forKey: OperationKey(key), in: nil)
    }

    /// Sets the priority of the operation under `key` and of the unfinished operations it
    /// waits for directly (a row scrolled back into view: its download and its filter),
    /// moving those already waiting for a slot to their new band.
    public func setQueuePriority(_ priority: Operation.QueuePriority, forKey key: some Hashable & Sendable) {
        guard let operation = operation(forKey: key) else { return }
        operation.queuePriority = priority
        for dependency in operation.dependencies where !dependency._isFinishingFlag {
            dependency.queuePriority = priority
        }
    }
}

extension OperationQueue {
    fileprivate func _addOperation(forKey key: OperationKey, _ make: () -> Operation) -> Operation {
        if let joined = _join(key) { return joined }
        // Made outside the lock (user code); another caller may have won meanwhile.
        let made = make()
        let winner = _keyed.entries.withLock { entries -> Operation? in
            if var entry = entries[key], entry.isInFlight {
                entry.interest += 1
                entries[key] = entry
                return entry.operation
            }
            entries[key] = KeyedEntry(operation: made, interest: 1)
            return nil
        }
        if let winner { return winner }
        made._onFinish(for: .caller) { [weak self, weak made] _ in
            guard let self else { return }
            let removed = self._keyed.entries.withLock { entries -> KeyedEntry? in
                guard let entry = entries[key], entry.operation === made else { return nil }
                return entries.removeValue(forKey: key)
            }
            _ = removed
        }
        addOperation(made)
        return made
    }

    /// Withdraws one interest in the operation under `key` — only if it is `operation`, when
    /// given; when nobody else wants it, cancels it and frees the key. Returns whether it
    /// cancelled.
    @discardableResult
    fileprivate func _withdrawInterest(forKey key: OperationKey, in operation: Operation?) -> Bool {
        let cancelled = _keyed.entries.withLock { entries -> Operation? in
            guard var entry = entries[key], operation.map({ $0 === entry.operation }) ?? entry.isInFlight else { return nil }
            entry.interest -= 1
            guard entry.interest <= 0 else {
                entries[key] = entry
                return nil
            }
            entries[key] = nil
            return entry.operation
        }
        cancelled?.cancel()
        return cancelled != nil
    }

    private func _join(_ key: OperationKey) -> Operation? {
        _keyed.entries.withLock { entries in
            guard var entry = entries[key], entry.isInFlight else { return nil }
            entry.interest += 1
            entries[key] = entry
            return entry.operation
        }
    }
}

/// The operations in flight under a key, kept with their queue.
/// - Note: `@unchecked Sendable`-free: `entries` is a `Locked`.
final class KeyedOperations: Sendable {
    let entries = Locked<[OperationKey: KeyedEntry]>([:])
}

extension OperationQueue {
    /// The queue's operations in flight under a key (`addOperation(forKey:_:)`).
    var _keyed: KeyedOperations { _layerValue { KeyedOperations() } }
}
