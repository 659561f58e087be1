/// The state of one iteration of an ``OperationEventStream``: a bounded buffer that drops
/// its oldest event when full, and the consumer waiting for the next one.
///
/// Decided under the lock, acted on after it: a continuation is resumed, and a
/// subscription cancelled, only after the lock is released.
struct EventStreamState {
    let limit: Int
    /// Buffered events: `events[head...]`; the slots before `head` are consumed.
    var events: [OperationEvent] = []
    var head = 0
    /// Events dropped since the last delivered element.
    var dropped = 0
    /// The consumer waiting for an event, if any.
    var waiter: UnsafeContinuation<OperationEventStream.Element?, Never>?
    /// No event will be added any more: the stream ends once the buffer is empty.
    var isClosed = false

    var isEmpty: Bool { head == events.count }

    /// Buffers `event` (dropping the oldest when full), or hands it to the waiting consumer:
    /// returns the continuation to resume after the lock.
    mutating func push(_ event: OperationEvent) -> (UnsafeContinuation<OperationEventStream.Element?, Never>, OperationEventStream.Element)? {
        guard !isClosed else { return nil }
        if let waiter {
            // Waiting means the buffer is empty: the event goes straight through.
            self.waiter = nil
            defer { dropped = 0 }
            return (waiter, OperationEventStream.Element(event: event, droppedBefore: dropped))
        }
        if events.count - head == limit {
            head += 1
            dropped += 1
        }
        // Reclaim consumed slots once they are the larger part (amortized O(1) per event).
        if head > 0, head * 2 >= events.count {
            events.removeFirst(head)
            head = 0
        }
        events.append(event)
        return nil
    }

    enum Next {
        case element(OperationEventStream.Element?)
        case wait
        /// Another consumer is waiting already.
        case busy
    }

    /// Takes the next element, or says that the consumer must wait for one.
    mutating func take() -> Next {
        if isEmpty {
            if isClosed { return .element(nil) }
            return waiter == nil ? .wait : .busy
        }
        let event = events[head]
        head += 1
        if isEmpty {
            events.removeAll(keepingCapacity: true)
            head = 0
        }
        defer { dropped = 0 }
        return .element(OperationEventStream.Element(event: event, droppedBefore: dropped))
    }

    /// No more events: returns the waiting consumer, to be resumed with nil.
    mutating func close(discardingBuffer: Bool) -> UnsafeContinuation<OperationEventStream.Element?, Never>? {
        isClosed = true
        if discardingBuffer {
            events = []
            head = 0
        }
        defer { waiter = nil }
        return waiter
    }
}

/// Holds one iteration's buffer (``EventStreamState``) and its queue subscription.
///
/// The queue's handler holds it weakly: releasing the iterator releases it, which cancels
/// the subscription.
final class EventStreamStorage: Sendable {
    private let state: Locked<EventStreamState>
    private let subscription = Locked<OperationEventSubscription?>(nil)
    /// For one operation's stream: the operation and its finish hook.
    private let operation: Operation?
    private let finishHook = Locked<UInt64?>(nil)

    init(limit: Int, operation: Operation?) {
        state = Locked(EventStreamState(limit: limit))
        self.operation = operation
    }

    func start(on queue: OperationQueue) {
        let operation = operation
        let handler = queue.addEventHandler { [weak self] event in
            guard let self else { return }
            if let operation, event.operation !== operation { return }
            self.receive(event)
        }
        subscription.withLock { $0 = handler }
        guard let operation else { return }
        // Subscribed first, then asked: an operation whose finished event went out before
        // the subscription ends the stream through this hook (which runs after that event
        // was delivered); otherwise its finished event ends it.
        let id = operation._onFinish(for: .bookkeeping) { [weak self] _ in self?.close(discardingBuffer: false) }
        finishHook.withLock { $0 = id }
    }

    private func receive(_ event: OperationEvent) {
        let handOver = state.withLock { $0.push(event) }
        if let (waiter, element) = handOver { waiter.resume(returning: element) }
        if case .finished = event.kind, operation != nil { close(discardingBuffer: false) }
    }

    func next() async -> OperationEventStream.Element? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<OperationEventStream.Element?, Never>) in
                let next = state.withLock { state -> EventStreamState.Next in
                    let next = state.take()
                    if case .wait = next { state.waiter = continuation }
                    return next
                }
                switch next {
                case .element(let element): continuation.resume(returning: element)
                case .wait: break
                case .busy: Misuse.fail("next() called on an iterator of queue events while another task waits in next() on it")
                }
            }
        } onCancel: {
            close(discardingBuffer: true)
        }
    }

    /// Ends the stream (once the buffer is consumed, unless it is discarded) and stops
    /// listening.
    func close(discardingBuffer: Bool) {
        let waiter = state.withLock { $0.close(discardingBuffer: discardingBuffer) }
        waiter?.resume(returning: nil)
        subscription.withLock { $0 }?.cancel()
    }

    deinit {
        subscription.withLock { $0 }?.cancel()
        if let operation, let id = finishHook.withLock({ $0 }) { operation._removeFinishHook(id) }
    }
}
