// A source's events as an AsyncSequence with a bounded buffer.
#if Durable

@_spi(Engine) import Operations
import Synchronization

/// A durable source's events as an `AsyncSequence`, with a bounded buffer.
///
/// Make one with ``DurableEventSource/events(bufferingNewest:)``. Recording starts when the
/// iterator is made (the `for await` loop begins) and stops when it is released or its task
/// is cancelled. Each iteration has its own buffer; when it is full, the oldest waiting
/// event is dropped and the next element says how many were (as `OperationEventStream`).
public struct DurableEventStream: AsyncSequence, Sendable {
    /// One delivered event, with the number of events dropped just before it.
    public struct Element: Sendable {
        /// The event.
        public let event: DurableEvent
        /// How many events of this iteration were dropped (the buffer was full) between the
        /// previous element and this one; 0 when none was.
        public let droppedBefore: Int
    }

    let source: any DurableEventSource
    let limit: Int

    init(source: any DurableEventSource, limit: Int) {
        if limit < 1 { Misuse.fail("events(bufferingNewest: \(limit)): the buffer must hold at least one event") }
        self.source = source
        self.limit = limit
    }

    /// Starts recording and returns the iterator.
    public func makeAsyncIterator() -> Iterator {
        // Each event numbered as it is handed over, so that the consumer counts the gaps.
        let (stream, continuation) = AsyncStream.makeStream(
            of: (number: UInt64, event: DurableEvent).self, bufferingPolicy: .bufferingNewest(limit))
        let counter = Counter()
        let subscription = source.addEventHandler { event in
            continuation.yield((counter.next(), event))
        }
        // Ends when the iterator is released or its task cancelled: the handler goes too.
        continuation.onTermination = { _ in subscription.cancel() }
        return Iterator(base: stream.makeAsyncIterator())
    }

    /// Delivers the buffered events in order; ends when its task is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<(number: UInt64, event: DurableEvent)>.Iterator
        var nextNumber: UInt64 = 0

        /// The next event, waiting for one if none is buffered; nil once the stream ended.
        public mutating func next() async -> Element? {
            guard let (number, event) = await base.next() else { return nil }
            defer { nextNumber = number + 1 }
            return Element(event: event, droppedBefore: Int(number - nextNumber))
        }
    }

    /// Numbers the events handed to one iteration (handlers run one at a time).
    private final class Counter: Sendable {
        private let value = Atomic<UInt64>(0)
        func next() -> UInt64 { value.add(1, ordering: .relaxed).oldValue }
    }
}
#endif
