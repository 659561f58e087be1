/// A queue's events (or one operation's) as an `AsyncSequence`, with a bounded buffer.
///
/// Make one with ``OperationQueue/events(bufferingNewest:)`` or
/// ``OperationQueue/events(of:bufferingNewest:)``. Recording starts when the iterator is
/// made (the `for await` loop begins) and stops when it is released or its task is
/// cancelled. Each iteration has its own buffer.
///
/// Buffering: the queue never waits for the consumer. At most `bufferingNewest` events wait
/// to be consumed; when an event arrives and the buffer is full, the *oldest* waiting event
/// is dropped. The next element delivered then says how many were dropped just before it
/// (``Element/droppedBefore``), and its ``OperationEvent/sequence`` jumps by as many.
public struct OperationEventStream: AsyncSequence, Sendable {
    /// One delivered event, with the number of events dropped just before it.
    public struct Element: Sendable {
        /// The event.
        public let event: OperationEvent
        /// How many events of this iteration were dropped (the buffer was full) between the
        /// previous element and this one; 0 when none was.
        public let droppedBefore: Int
    }

    let queue: OperationQueue
    let operation: Operation?
    let limit: Int

    init(queue: OperationQueue, operation: Operation?, limit: Int) {
        if limit < 1 { Misuse.fail("events(bufferingNewest: \(limit)): the buffer must hold at least one event") }
        self.queue = queue
        self.operation = operation
        self.limit = limit
    }

    /// Starts recording and returns the iterator.
    public func makeAsyncIterator() -> Iterator {
        let storage = EventStreamStorage(limit: limit, operation: operation)
        storage.start(on: queue)
        return Iterator(storage: storage)
    }

    /// Delivers the buffered events in order; ends when its task is cancelled, or, for one
    /// operation's stream, after that operation's finished event.
    ///
    /// `Sendable`, so that it can be made where recording must start and consumed in another
    /// task. - Important: Calling `next()` from two tasks at once is a programmer error.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let storage: EventStreamStorage

        /// The next event, waiting for one if none is buffered; nil once the stream ended.
        public mutating func next() async -> Element? {
            await storage.next()
        }

        /// The next event, waiting for one if none is buffered; nil once the stream ended.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await storage.next()
        }
    }
}

extension OperationQueueExtensions where Self: OperationQueue {
    /// This queue's events from now on, as an `AsyncSequence`, in the order they happened.
    ///
    /// The queue never waits for the consumer: when more than `bufferingNewest` events are
    /// waiting, the oldest are dropped and the next element says how many
    /// (``OperationEventStream/Element/droppedBefore``). See ``OperationEventStream``.
    /// - Important: `bufferingNewest` must be at least 1.
    public func events(bufferingNewest limit: Int = 1024) -> OperationEventStream {
        OperationEventStream(queue: self, operation: nil, limit: limit)
    }

    /// The events of one operation of this queue (added now or later), ending after its
    /// finished event, or at once if it has already finished.
    ///
    /// Buffered as ``events(bufferingNewest:)``; an operation has only a few events, so
    /// the default buffer never drops any.
    public func events(of operation: Operation, bufferingNewest limit: Int = 16) -> OperationEventStream {
        OperationEventStream(queue: self, operation: operation, limit: limit)
    }
}
