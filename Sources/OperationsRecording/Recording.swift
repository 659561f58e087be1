import Operations

/// What an ``OperationRecorder`` saw: every operation of the recorded queues, with its
/// times, outcome and dependencies. Write it out with ``html(notes:maximumRows:)``,
/// ``chromeTraceJSON()`` or ``graph``.
public struct Recording: Sendable {
    /// How an operation ended, for a person.
    public enum Outcome: Sendable, Hashable {
        /// It ran and reported no error.
        case succeeded
        /// It was cancelled; `reason` describes what `Operation.cancel(with:)` gave.
        case cancelled(reason: String?)
        /// It reported an error, described.
        case failed(error: String)
        /// It had not finished when the recording stopped.
        case unfinished

        /// `succeeded`, `cancelled`, `failed` or `unfinished`.
        public var name: String {
            switch self {
            case .succeeded: "succeeded"
            case .cancelled: "cancelled"
            case .failed: "failed"
            case .unfinished: "unfinished"
            }
        }
    }

    /// One operation as recorded. Times are nanoseconds since the recording began.
    public struct Operation: Sendable, Identifiable {
        /// Its place in the recording, in the order operations were added (from 0).
        public let id: Int
        /// Its name, or its type and number when it has none.
        public internal(set) var name: String
        /// The name of its queue.
        public let queue: String
        /// Its queue's place in ``Recording/queues``.
        public let queueIndex: Int
        /// The row it is drawn in when a timeline groups operations.
        public internal(set) var group: String
        /// When it was added to its queue.
        public var enqueued: UInt64
        /// When its queue started it (also for a cancelled operation, whose `main()` does not run).
        public var started: UInt64?
        /// When it finished.
        public var finished: UInt64?
        /// When it was cancelled, if it was.
        public var cancelled: UInt64?
        /// How it ended.
        public var outcome: Outcome
        /// The recorded operations it depended on (their ``id``), in the order added.
        public var dependencies: [Int]
        /// Stretches of work inside it (a BlockOperation's blocks), as
        /// ``OperationRecorder/recordPart(_:of:_:)`` timed them, in the order they began.
        public internal(set) var parts: [Part] = []

        /// Cancelled before its queue started it: it never ran.
        public var wasCancelledBeforeStart: Bool {
            guard let cancelled else { return false }
            return started.map { cancelled <= $0 } ?? true
        }

        /// How long it waited in its queue (enqueued → started, or → finished if it never started).
        public var waitingTime: UInt64? {
            (started ?? finished).map { $0 >= enqueued ? $0 - enqueued : 0 }
        }

        /// How long it ran (started → finished); nil if it never ran.
        public var runningTime: UInt64? {
            guard let started, let finished, !wasCancelledBeforeStart else { return nil }
            return finished >= started ? finished - started : 0
        }
    }

    /// A stretch of work inside an operation (one block of a BlockOperation). Times are
    /// nanoseconds since the recording began.
    public struct Part: Sendable {
        /// What the part is, as given to ``OperationRecorder/recordPart(_:of:_:)``.
        public let name: String
        /// When it began.
        public let started: UInt64
        /// When it ended.
        public let finished: UInt64
    }

    /// A recorded queue.
    public struct Queue: Sendable {
        /// Its name.
        public let name: String
        /// Its `maxConcurrentOperationCount` when the recording stopped (−1: the default).
        public let maxConcurrentOperationCount: Int
        /// The most of its operations that ran at the same time in the recording.
        public let mostConcurrent: Int
        /// Its family, when a timeline groups queues named alike (by the recorder's grouping).
        public let group: String
    }

    /// The title, for pages and traces.
    public let title: String
    /// The operations, in the order they were added.
    public let operations: [Operation]
    /// The queues, in the order they were recorded.
    public let queues: [Queue]
    /// How long the recording lasted, in nanoseconds.
    public let duration: UInt64

    /// How many operations ended each way, by ``Outcome/name``.
    public var outcomeCounts: [String: Int] {
        Dictionary(grouping: operations, by: \.outcome.name).mapValues(\.count)
    }

    /// A one-line summary: "32 operations on 1 queue over 1.20 s: 30 succeeded, 2 cancelled".
    public var summary: String {
        let counts = outcomeCounts
        let parts = ["succeeded", "cancelled", "failed", "unfinished"].compactMap { name in
            counts[name].map { "\($0) \(name)" }
        }
        let cancelledEarly = operations.filter(\.wasCancelledBeforeStart).count
        return "\(operations.count) operation\(operations.count == 1 ? "" : "s") on \(queues.count) queue\(queues.count == 1 ? "" : "s") over \(Markup.seconds(duration)): "
            + parts.joined(separator: ", ")
            + (cancelledEarly > 0 ? " (\(cancelledEarly) cancelled before they started)" : "")
    }
}
