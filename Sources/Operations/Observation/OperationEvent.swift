#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Something that happened to an operation of a queue: what timelines and logs are made of.
///
/// Receive them with ``OperationQueue/addEventHandler(_:)``.
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
    /// The queue whose handler receives the event.
    public let queue: OperationQueue
    /// Monotonic time of the event, in nanoseconds (`DispatchTime.now().uptimeNanoseconds`).
    public let time: UInt64
    /// Identifies the thread the event happened on (`pthread_self()`).
    public let thread: UInt64
    /// For `.started`: the queue's worker slot (0 ..< 64) that runs it, stable for the
    /// life of that worker: the lanes of a timeline.
    public let slot: Int?
}

/// Keeps a handler registered with ``OperationQueue/addEventHandler(_:)`` until it is
/// cancelled or released.
public final class OperationEventSubscription: Sendable {
    private let state: Locked<(queue: OperationQueue?, id: UInt64)>

    init(queue: OperationQueue, id: UInt64) {
        state = Locked((queue, id))
    }

    /// Stops the handler. Safe to call more than once.
    public func cancel() {
        let (queue, id) = state.withLock { state in
            defer { state.queue = nil }
            return (state.queue, state.id)
        }
        queue?._removeEventHandler(id)
    }

    deinit { cancel() }
}

/// The event handlers of one queue.
struct EventHandlers {
    var handlers: [(id: UInt64, handler: @Sendable (OperationEvent) -> Void)] = []
    var nextID: UInt64 = 1
}

extension OperationQueue {
    /// Calls `handler` for every event of this queue's operations (enqueued, started,
    /// cancelled, finished), on the thread where it happened, with no lock of the library
    /// held. Keep the returned subscription; the handler stops when it is cancelled or
    /// released.
    /// - Note: While no handler is registered, events cost one atomic load.
    public func addEventHandler(_ handler: @escaping @Sendable (OperationEvent) -> Void) -> OperationEventSubscription {
        let id = eventHandlers.withLock { state in
            defer { state.nextID += 1 }
            state.handlers.append((state.nextID, handler))
            return state.nextID
        }
        hasEventHandlers.store(true, ordering: .releasing)
        return OperationEventSubscription(queue: self, id: id)
    }

    final func _removeEventHandler(_ id: UInt64) {
        // The handler is released after the lock: its captures' deinit is user code.
        let (removed, empty) = eventHandlers.withLock { state in
            let removed = state.handlers.filter { $0.id == id }
            state.handlers.removeAll { $0.id == id }
            return (removed, state.handlers.isEmpty)
        }
        _ = removed
        if empty { hasEventHandlers.store(false, ordering: .releasing) }
    }

    /// Delivers an event, if anyone listens.
    @inline(__always)
    final func _emit(_ kind: OperationEvent.Kind, _ operation: Operation, slot: Int? = nil) {
        guard hasEventHandlers.load(ordering: .relaxed) else { return }
        _deliver(kind, operation, slot: slot)
    }

    private func _deliver(_ kind: OperationEvent.Kind, _ operation: Operation, slot: Int?) {
        let handlers = eventHandlers.withLock { $0.handlers }
        let event = OperationEvent(
            kind: kind, operation: operation, queue: self, time: DispatchTime.now().uptimeNanoseconds,
            thread: OperationEvent.currentThread, slot: slot)
        for (_, handler) in handlers { handler(event) }
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
