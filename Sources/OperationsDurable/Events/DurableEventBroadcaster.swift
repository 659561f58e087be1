// The handlers of one source and the delivery of its events, in order, one at a time.
#if Durable

import Dispatch
import Foundation
@_spi(Engine) import Operations
import Synchronization

/// One source's handlers and the events recorded and not yet delivered.
///
/// An event is numbered where it is recorded, under the lock, and delivered in sequence order
/// by one deliverer at a time. A worker's events are delivered on a serial dispatch queue of
/// their own: no task of the worker (a body, the claim loop, the heartbeat) runs a handler, so
/// a slow handler delays only later events. A queue's events are delivered by the task that
/// adds (before `add` returns), unless another task delivers at that moment.
///
/// A handler whose subscription is cancelled is not called again (a call under way finishes).
/// While a handler does not return, at most `maximumWaiting` events wait: beyond, the oldest
/// are dropped (handlers see the gap in ``DurableEvent/sequence``), with one warning per stall.
final class DurableEventBroadcaster: Sendable {
    /// A handler, and whether its subscription still stands: read before each call, so that a
    /// delivery under way skips a handler cancelled meanwhile.
    private final class Registration: Sendable {
        let id: UInt64
        let handler: @Sendable (DurableEvent) -> Void
        let isActive = Atomic<Bool>(true)

        init(id: UInt64, handler: @escaping @Sendable (DurableEvent) -> Void) {
            self.id = id
            self.handler = handler
        }
    }

    private struct State {
        var handlers: [Registration] = []
        var nextID: UInt64 = 1
        var pending: [DurableEvent] = []
        var nextSequence: UInt64 = 0
        var delivering = false
        /// Events dropped since the deliverer last caught up; the warning is given at the first.
        var dropped = 0
    }

    private let state = Locked(State())
    /// Where events are delivered: nil, by the task that records them.
    private let deliveries: DispatchQueue?
    /// Whether any handler is registered: the one load an event costs when nobody listens.
    /// Changed only inside the lock, where a recording decides too.
    private let isListening = Atomic<Bool>(false)
    /// What reports the events, for the warning ("durable worker …").
    private let source: String
    private let maximumWaiting: Int

    init(deliveringOnOwnQueue: Bool, source: String, maximumWaiting: Int = 10_000) {
        precondition(maximumWaiting >= 2, "DurableEventBroadcaster: maximumWaiting must be at least 2")
        deliveries = deliveringOnOwnQueue ? DispatchQueue(label: "OperationsDurable.events") : nil
        self.source = source
        self.maximumWaiting = maximumWaiting
    }

    /// How many events are recorded and not yet handed to a deliverer.
    var waitingCount: Int { state.withLock { $0.pending.count } }

    func addHandler(_ handler: @escaping @Sendable (DurableEvent) -> Void) -> DurableEventSubscription {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.handlers.append(Registration(id: state.nextID, handler: handler))
            isListening.store(true, ordering: .releasing)
            return state.nextID
        }
        return DurableEventSubscription(broadcaster: self, id: id)
    }

    func removeHandler(_ id: UInt64) {
        var removed = state.withLock { state in
            let removed = state.handlers.filter { $0.id == id }
            state.handlers.removeAll { $0.id == id }
            for registration in removed { registration.isActive.store(false, ordering: .releasing) }
            if state.handlers.isEmpty {
                isListening.store(false, ordering: .releasing)
                // Nobody would receive them.
                if !state.delivering { state.pending = [] }
            }
            return removed
        }
        // Dropped after the lock: the handler's captures' deinit is user code.
        removed.removeAll()
    }

    /// Records an event and delivers what is pending, unless another task delivers now.
    /// Called with no lock held; `draft` is evaluated only when someone listens.
    @inline(__always)
    func report(_ draft: @autoclosure () -> DurableEvent.Draft) {
        guard isListening.load(ordering: .relaxed) else { return }
        append(draft())
        deliverPending()
    }

    /// Records an event without delivering it, for a caller that holds a lock of its own
    /// (so that the event's place follows that lock's order; this lock is taken last). The
    /// caller calls ``deliver()`` after its lock.
    @inline(__always)
    func record(_ draft: @autoclosure () -> DurableEvent.Draft) {
        guard isListening.load(ordering: .relaxed) else { return }
        append(draft())
    }

    /// Delivers what is pending, unless another task delivers now. Called with no lock held.
    @inline(__always)
    func deliver() {
        guard isListening.load(ordering: .relaxed) else { return }
        deliverPending()
    }

    private func append(_ draft: DurableEvent.Draft) {
        let firstDrop = state.withLock { state -> Int? in
            guard !state.handlers.isEmpty else { return nil }
            var firstDrop: Int?
            if state.pending.count >= maximumWaiting {
                // The oldest half at once, so that a long stall costs O(1) per event.
                let count = maximumWaiting / 2
                state.pending.removeFirst(count)
                if state.dropped == 0 { firstDrop = count }
                state.dropped += count
            }
            // Read under the lock, so that times follow the sequence.
            state.pending.append(draft.event(sequence: state.nextSequence, date: Date(), time: DispatchTime.now().uptimeNanoseconds))
            state.nextSequence += 1
            return firstDrop
        }
        if let firstDrop {
            Misuse.warn(
                "\(source): an event handler has not returned while \(maximumWaiting) events waited; the oldest \(firstDrop) were dropped (handlers see the gap in the events' sequence numbers), and more are dropped until it returns")
        }
    }

    private func deliverPending() {
        let first = state.withLock { state -> [DurableEvent]? in
            guard !state.delivering, !state.pending.isEmpty else { return nil }
            state.delivering = true
            defer { state.pending = [] }
            return state.pending
        }
        guard let first else { return }
        if let deliveries {
            deliveries.async { self.drain(first) }
        } else {
            drain(first)
        }
    }

    /// As the deliverer: `first`, then whatever was recorded meanwhile.
    private func drain(_ first: [DurableEvent]) {
        var batch = first
        while true {
            let handlers = state.withLock { $0.handlers }
            for event in batch {
                for registration in handlers where registration.isActive.load(ordering: .acquiring) {
                    registration.handler(event)
                }
            }
            let next = state.withLock { state -> [DurableEvent]? in
                guard !state.pending.isEmpty else {
                    state.delivering = false
                    state.dropped = 0
                    return nil
                }
                defer { state.pending = [] }
                return state.pending
            }
            guard let next else { return }
            batch = next
        }
    }
}
#endif
