// Who reports durable events, and how a handler is kept registered.
#if Durable

@_spi(Engine) import Operations

/// Something that reports ``DurableEvent``s: a ``DurableWorker`` (the attempts it runs) or a
/// ``DurableQueue`` (what is added and cancelled through it). Each has its own handlers and
/// its own order; observe both to see an operation from its `add` to its end.
public protocol DurableEventSource: Sendable {
    /// Calls `handler` for every event from now on, in the order they happened
    /// (``DurableEvent/sequence``), one at a time, with no lock of the library held. Keep the
    /// returned subscription; the handler stops when it is cancelled or released: once
    /// `cancel()` returns, it is not called again (a call under way finishes).
    ///
    /// A handler that does not return holds up the source's later events, never its work.
    /// At most 10,000 events wait meanwhile; beyond, the oldest are dropped, handlers see the
    /// gap in the sequence numbers, and `OperationDiagnostic` warns once per stall.
    ///
    /// - Note: While no handler is registered, an event costs one atomic load.
    /// - Important: A queue's handlers run on the task that called `add` (or on another task
    ///   adding at that moment), a worker's on a dispatch queue of the worker's own: return
    ///   quickly.
    func addEventHandler(_ handler: @escaping @Sendable (DurableEvent) -> Void) -> DurableEventSubscription
}

extension DurableEventSource {
    /// The events from now on, as an `AsyncSequence`, in the order they happened.
    ///
    /// The source never waits for the consumer: when more than `bufferingNewest` events are
    /// waiting, the oldest are dropped and the next element says how many
    /// (``DurableEventStream/Element/droppedBefore``). Recording starts when the iterator
    /// is made and stops when it is released or its task is cancelled.
    /// - Important: `bufferingNewest` must be at least 1.
    public func events(bufferingNewest limit: Int = 1024) -> DurableEventStream {
        DurableEventStream(source: self, limit: limit)
    }
}

/// Keeps a handler registered with ``DurableEventSource/addEventHandler(_:)`` until it is
/// cancelled or released.
public final class DurableEventSubscription: Sendable {
    private let state: Locked<(broadcaster: DurableEventBroadcaster?, id: UInt64)>

    init(broadcaster: DurableEventBroadcaster, id: UInt64) {
        state = Locked((broadcaster, id))
    }

    /// Stops the handler. Safe to call more than once.
    public func cancel() {
        let (broadcaster, id) = state.withLock { state in
            defer { state.broadcaster = nil }
            return (state.broadcaster, state.id)
        }
        broadcaster?.removeHandler(id)
    }

    deinit { cancel() }
}
#endif
