#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Something that happened to an operation of a queue: what timelines and logs are made of.
///
/// Receive them with ``OperationQueue/addEventHandler(_:)``, or as an `AsyncSequence` with
/// ``OperationQueue/events(bufferingNewest:)``.
public struct OperationEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// Added to the queue.
        case enqueued
        /// The queue started it (called its `start()`), on `slot`.
        case started
        /// `cancel()` was called while it was in the queue.
        case cancelled
        /// It finished (before any of its dependents can start); `wasCancelled` tells
        /// whether it had been cancelled by then.
        case finished(wasCancelled: Bool)
    }

    /// What happened.
    public let kind: Kind
    /// The operation it happened to.
    public let operation: Operation
    /// The queue the operation is in.
    public let queue: OperationQueue
    /// The event's place in its queue's order, from 0: events are recorded in the order
    /// they happen (under the lock that makes them happen) and delivered in this order.
    public let sequence: UInt64
    /// Monotonic time of the event, in nanoseconds (`DispatchTime.now().uptimeNanoseconds`).
    public let time: UInt64
    /// Identifies the thread the event happened on (`pthread_self()`).
    public let thread: UInt64
    /// For `.started`: the queue's worker slot (0 ..< 64) that runs it, stable for the
    /// life of that worker.
    public let slot: Int?
}

/// Keeps a handler registered with ``OperationQueue/addEventHandler(_:)`` (or a hook of
/// ``OperationQueue/addEnqueueHook(_:)``) until it is cancelled or released.
public final class OperationEventSubscription: Sendable {
    private let state: Locked<(queue: OperationQueue?, id: UInt64)>
    /// Takes the registration `id` out of the queue: whoever registered it says how.
    private let remove: @Sendable (OperationQueue, UInt64) -> Void

    init(queue: OperationQueue, id: UInt64, remove: @escaping @Sendable (OperationQueue, UInt64) -> Void) {
        state = Locked((queue, id))
        self.remove = remove
    }

    /// Stops the handler. Safe to call more than once.
    public func cancel() {
        let (queue, id) = state.withLock { state in
            defer { state.queue = nil }
            return (state.queue, state.id)
        }
        if let queue { remove(queue, id) }
    }

    deinit { cancel() }
}

/// The event handlers of one queue.
typealias EventHandlers = HookList<@Sendable (OperationEvent) -> Void>

/// The events of one queue that were recorded and not yet delivered, guarded by its own
/// lock, which is taken last (inside an operation's or the queue's lock, never the other
/// way round).
///
/// Events are recorded where they happen, under the lock that makes them happen, so that
/// their sequence numbers follow reality; they are delivered after every lock is released,
/// by one thread at a time (the *deliverer*), in sequence order. A thread that records an
/// event while another delivers leaves it to that one and goes on; only a finish waits for
/// its own event to be delivered (so that it is handled before dependents start).
struct EventLog {
    /// Whether any handler is registered: decided under this lock, so that no event is
    /// recorded after the last handler went away (it would never be delivered).
    var isListening = false
    var pending: [OperationEvent] = []
    var nextSequence: UInt64 = 0
    /// Every event with a smaller sequence number has been delivered.
    var deliveredBefore: UInt64 = 0
    /// The thread delivering now, if any.
    var deliverer: UInt64?
    /// Threads waiting until the events before `sequence` have been delivered.
    var waiters: [(sequence: UInt64, semaphore: DispatchSemaphore)] = []

    /// Takes the waiters whose events have been delivered.
    mutating func takeSatisfiedWaiters() -> [DispatchSemaphore] {
        let satisfied = waiters.filter { $0.sequence <= deliveredBefore }.map(\.semaphore)
        if !satisfied.isEmpty { waiters.removeAll { $0.sequence <= deliveredBefore } }
        return satisfied
    }
}

extension OperationQueueExtensions where Self: OperationQueue {
    /// Calls `handler` for every event of this queue's operations (enqueued, started,
    /// cancelled, finished), in the order they happened (``OperationEvent/sequence``), one
    /// at a time, with no lock of the library held. Keep the returned subscription; the
    /// handler stops when it is cancelled or released. A delivery under way on another
    /// thread checks before each call: after `cancel()` returns, the handler may still be
    /// called once, by a delivery that had checked just before, and never again.
    ///
    /// An operation's finished event has been handled before its dependents start and its
    /// waiters wake: the thread that finishes it waits for that (unless it is itself in a
    /// handler of this queue). Other events never make their thread wait.
    /// - Important: A handler must not wait for an operation of the queue to finish (its
    ///   finished event waits for the handler to return).
    /// - Note: While no handler is registered, events cost one atomic load.
    public func addEventHandler(_ handler: @escaping @Sendable (OperationEvent) -> Void) -> OperationEventSubscription {
        let id = eventHandlers.withLock { $0.add(handler) }
        // Both flags change only inside the event log's lock, where a removal decides too.
        eventLog.withLock { log in
            log.isListening = true
            hasEventHandlers.store(true, ordering: .releasing)
        }
        return OperationEventSubscription(queue: self, id: id) { $0._removeEventHandler($1) }
    }
}

extension OperationQueue {
    final func _removeEventHandler(_ id: UInt64) {
        // Marked inactive here: a delivery under way checks before each call.
        var removed = eventHandlers.withLock { $0.remove(id) }
        // Nobody listens any more: decided in the event log's lock (where adding a handler
        // sets the flags again), so a handler added meanwhile is never silenced. What was
        // recorded is not delivered (dropped after the lock).
        let (dropped, waiters) = eventLog.withLock { log -> ([OperationEvent], [DispatchSemaphore]) in
            guard eventHandlers.withLock({ $0.isEmpty }) else { return ([], []) }
            log.isListening = false
            hasEventHandlers.store(false, ordering: .releasing)
            // A delivering thread drains what is pending itself.
            guard log.deliverer == nil else { return ([], []) }
            defer { log.pending = [] }
            log.deliveredBefore = log.nextSequence
            return (log.pending, log.takeSatisfiedWaiters())
        }
        _ = dropped
        for waiter in waiters { waiter.signal() }
        // The handler is dropped last, after every lock: its captures' deinit is user code.
        removed.removeAll()
    }

    /// Records an event, if anyone listens. Called under the lock that makes it happen (an
    /// operation's, or for `enqueued` the queue's and the operation's), so that the events
    /// of one operation are recorded in the order they happened.
    @inline(__always)
    final func _record(_ kind: OperationEvent.Kind, _ operation: Operation, slot: Int? = nil) {
        guard hasEventHandlers.load(ordering: .relaxed) else { return }
        let time = DispatchTime.now().uptimeNanoseconds
        let thread = OperationEvent.currentThread
        eventLog.withLock { log in
            guard log.isListening else { return }
            log.pending.append(OperationEvent(
                kind: kind, operation: operation, queue: self, sequence: log.nextSequence, time: time,
                thread: thread, slot: slot))
            log.nextSequence += 1
        }
    }

    /// Delivers the events recorded so far, or leaves them to the thread delivering now
    /// (`waitingForDelivery`: and waits until it has). Called with no lock held.
    @inline(__always)
    final func _deliverEvents(waitingForDelivery: Bool = false) {
        guard hasEventHandlers.load(ordering: .relaxed) else { return }
        _deliverRecordedEvents(waitingForDelivery: waitingForDelivery)
    }

    private enum Delivery {
        case done
        case wait(DispatchSemaphore)
        case deliver([OperationEvent])
    }

    private func _deliverRecordedEvents(waitingForDelivery: Bool) {
        let me = OperationEvent.currentThread
        let action = eventLog.withLock { log -> Delivery in
            let target = log.nextSequence
            guard log.deliveredBefore < target else { return .done }
            if let deliverer = log.deliverer {
                // A handler on this thread caused the event: the loop below delivers it
                // next. Otherwise the deliverer delivers it (it drains until nothing is
                // pending); only a finish waits for that.
                if deliverer == me || !waitingForDelivery { return .done }
                let semaphore = DispatchSemaphore(value: 0)
                log.waiters.append((target, semaphore))
                return .wait(semaphore)
            }
            log.deliverer = me
            defer { log.pending = [] }
            return .deliver(log.pending)
        }
        switch action {
        case .done:
            return
        case .wait(let semaphore):
            semaphore.wait()
        case .deliver(var batch):
            while true {
                let handlers = eventHandlers.withLock { $0.registrations }
                for event in batch {
                    for handler in handlers where handler.isActive { handler.hook(event) }
                }
                let last = batch.last?.sequence
                let (next, woken) = eventLog.withLock { log -> ([OperationEvent]?, [DispatchSemaphore]) in
                    if let last { log.deliveredBefore = max(log.deliveredBefore, last + 1) }
                    let woken = log.takeSatisfiedWaiters()
                    guard !log.pending.isEmpty else {
                        log.deliverer = nil
                        return (nil, woken)
                    }
                    defer { log.pending = [] }
                    return (log.pending, woken)
                }
                for waiter in woken { waiter.signal() }
                // The delivered events (and the operations they hold) are dropped here.
                guard let next else { return }
                batch = next
            }
        }
    }
}

extension OperationEvent {
    static var currentThread: UInt64 {
        #if canImport(Darwin)
        UInt64(UInt(bitPattern: pthread_self()))
        #else
        UInt64(pthread_self())
        #endif
    }
}
