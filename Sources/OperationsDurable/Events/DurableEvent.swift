// What a durable queue or worker reports: the durable counterpart of `OperationEvent`.
#if Durable

import Foundation

/// Something that happened to a durable operation, as one queue or worker of this process
/// saw it: what the tracing, metrics and logging adapters are made of.
///
/// A ``DurableQueue`` reports ``Kind/enqueued`` for the operations added through it and
/// ``Kind/cancelled`` for the cancels issued through it (or through the handles it made); a
/// ``DurableWorker`` reports, for each attempt it runs, ``Kind/started``, then
/// ``Kind/retried`` or ``Kind/finished(_:)``, with ``Kind/cancelled`` in between when it
/// learns that a cancel was requested. Receive them with `addEventHandler(_:)` or
/// `events(bufferingNewest:)` on either (see ``DurableEventSource``).
///
/// - Note: Events are what this process saw, not the store's record: a worker elsewhere
///   reports its own attempts, and a cancel that reaches the store while a failed attempt is
///   being recorded may turn a reported ``Kind/retried`` into a cancelled operation.
public struct DurableEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// Added to the store (an `add` whose key matched a pending operation reports none).
        case enqueued
        /// An attempt began on the worker (``DurableEvent/attempt`` says which).
        case started
        /// A cancel was requested: issued through the queue or a handle it made, or, on a
        /// worker, learnt from the store while the attempt runs.
        case cancelled
        /// The attempt ended and the operation runs again: its body failed with attempts
        /// left, or the worker gave it back (stopping) or lost its lease.
        /// ``DurableEvent/error`` says why.
        case retried
        /// The attempt ended the operation.
        case finished(Outcome)
    }

    /// How an operation ended.
    public enum Outcome: Sendable, Hashable {
        case succeeded
        /// The error of its last attempt.
        case failed(String)
        /// The cancellation's reason.
        case cancelled(String)
    }

    /// What happened.
    public let kind: Kind
    /// The operation it happened to.
    public let operation: DurableOperationID
    /// The operation's kind of work (its ``DurableOperation/kind``).
    public let operationKind: String
    /// The operation's queue.
    public let queue: String
    /// For `started`, `retried`, `finished` and a worker's `cancelled`: the attempt, from 1.
    public let attempt: Int?
    /// For a worker's events: its ``DurableWorker/id``.
    public let worker: String?
    /// For `enqueued` and `started`: the operations it depends on.
    public let dependencies: [DurableOperationID]
    /// For `retried`, a failed `finished` and `cancelled`: the error or the reason.
    public let error: String?
    /// Wall-clock time of the event.
    public let date: Date
    /// Monotonic time of the event, in nanoseconds (`DispatchTime.now().uptimeNanoseconds`),
    /// for durations between events of one process.
    public let time: UInt64
    /// The event's place in its source's order, from 0: each queue value (with its copies)
    /// and each worker numbers its own events, and delivers them in this order.
    public let sequence: UInt64
}

extension DurableEvent {
    /// What a source records; the source adds the time and the sequence number.
    struct Draft: Sendable {
        var kind: Kind
        var operation: DurableOperationID
        var operationKind: String
        var queue: String
        var attempt: Int? = nil
        var worker: String? = nil
        var dependencies: [DurableOperationID] = []
        var error: String? = nil

        func event(sequence: UInt64, date: Date, time: UInt64) -> DurableEvent {
            DurableEvent(
                kind: kind, operation: operation, operationKind: operationKind, queue: queue, attempt: attempt,
                worker: worker, dependencies: dependencies, error: error, date: date, time: time, sequence: sequence)
        }
    }
}
#endif
