#if Durable
import Foundation

/// What an operator's tool (the dashboard) reads from a store beyond what workers need, and
/// the actions it takes. Every read is paged by keys and served from indexes, so that its
/// cost does not grow with the operations a store keeps: a list reads one page, counts of
/// finished operations cover a recent window.
public protocol DurableStoreInspection: DurableOperationStore {
    /// Every queue the store knows: one named by a setting (a limit, a suspension) or by an
    /// unfinished operation, or one that finished an operation within `window` before `now`.
    /// Sorted by name.
    func queueSummaries(window: Duration, now: Date) async throws -> [DurableQueueSummary]

    /// How many operations of `queue` finished in each of the `minutes` minutes before
    /// `now`, oldest first.
    func finishedPerMinute(queue: String, minutes: Int, now: Date) async throws -> [Int]

    /// One page of the operations of `queue` in `state`: unfinished ones by id ascending,
    /// finished ones most recently finished first. `after` is the last id of the previous
    /// page (nil for the first).
    /// - Note: A page of finished ones after an operation that is no longer finished (retried,
    ///   or pruned) is empty.
    func operations(
        queue: String, state: DurableState, after: DurableOperationID?, limit: Int
    ) async throws -> [DurableOperationSummary]

    /// Everything known about one operation: its record with attempts, input, key, the
    /// operations it depends on and those that depend on it (each at most `edgeLimit`).
    func details(of id: DurableOperationID, edgeLimit: Int) async throws -> DurableOperationDetails?

    /// The operations that failed within `window` before `now` (of `queue`, or of every
    /// queue), grouped by queue, kind and error text, largest group first.
    func failureGroups(queue: String?, window: Duration, now: Date, limit: Int) async throws -> [DurableFailureGroup]

    /// The workers that sent a heartbeat within `window` before `now`, by name.
    func workers(window: Duration, now: Date) async throws -> [DurableWorkerSummary]

    /// Operations whose id is `text`, or whose kind or key is `text`, newest first.
    func search(_ text: String, limit: Int) async throws -> [DurableOperationSummary]

    /// Runs a failed or cancelled operation again: ready, with attempts left for one more
    /// try (its dependents cancelled by its end stay cancelled). False when the operation
    /// is not finished unsuccessfully, and false too for an unknown id: the operation's
    /// record tells the two apart.
    /// - Note: One with unfinished dependencies waits for them again. One whose key another
    ///   pending operation took meanwhile, or (unless it runs anyway) one with a failed or
    ///   cancelled dependency, is refused (``DurableError/Code/invalidArgument``).
    func retry(_ id: DurableOperationID) async throws -> Bool
}

/// One queue, as an operator looks at it.
public struct DurableQueueSummary: Sendable, Equatable, Codable {
    public var name: String
    /// Unfinished operations counted exactly; finished ones within the window asked for.
    public var counts: DurableOperationCounts
    public var limit: Int?
    public var suspended: Bool

    public init(name: String, counts: DurableOperationCounts, limit: Int?, suspended: Bool) {
        self.name = name
        self.counts = counts
        self.limit = limit
        self.suspended = suspended
    }
}

/// One operation in a list.
public struct DurableOperationSummary: Sendable, Equatable, Codable {
    public var id: DurableOperationID
    public var queue: String
    public var kind: String
    public var state: DurableState
    public var key: String?
    /// The last attempt's number (0 before the first).
    public var attempt: Int
    public var maximumAttempts: Int
    /// When it finished, for a finished operation.
    public var finishedAt: Date?
    /// The error of a failed operation, or the reason of a cancelled one.
    public var error: String?

    public init(
        id: DurableOperationID, queue: String, kind: String, state: DurableState, key: String?, attempt: Int,
        maximumAttempts: Int, finishedAt: Date?, error: String?
    ) {
        self.id = id
        self.queue = queue
        self.kind = kind
        self.state = state
        self.key = key
        self.attempt = attempt
        self.maximumAttempts = maximumAttempts
        self.finishedAt = finishedAt
        self.error = error
    }
}

/// Everything known about one operation.
public struct DurableOperationDetails: Sendable {
    /// With its attempts.
    public var record: DurableRecord
    /// The input as stored (JSON for operations enqueued through ``DurableQueue``).
    public var input: String
    public var key: String?
    public var priority: Int
    public var enqueuedAt: Date?
    public var finishedAt: Date?
    /// The worker that holds it, while it runs.
    public var worker: String?
    public var dependencies: [DurableOperationSummary]
    public var dependents: [DurableOperationSummary]

    public init(
        record: DurableRecord, input: String, key: String?, priority: Int, enqueuedAt: Date?, finishedAt: Date?,
        worker: String?, dependencies: [DurableOperationSummary], dependents: [DurableOperationSummary]
    ) {
        self.record = record
        self.input = input
        self.key = key
        self.priority = priority
        self.enqueuedAt = enqueuedAt
        self.finishedAt = finishedAt
        self.worker = worker
        self.dependencies = dependencies
        self.dependents = dependents
    }
}

/// Failures that share a queue, a kind and an error text.
public struct DurableFailureGroup: Sendable, Equatable, Codable {
    public var queue: String
    public var kind: String
    public var error: String
    public var count: Int
    public var lastFailedAt: Date
    /// The most recent failed operation of the group.
    public var latest: DurableOperationID

    public init(queue: String, kind: String, error: String, count: Int, lastFailedAt: Date, latest: DurableOperationID) {
        self.queue = queue
        self.kind = kind
        self.error = error
        self.count = count
        self.lastFailedAt = lastFailedAt
        self.latest = latest
    }
}

/// A worker process, as its heartbeats show it.
public struct DurableWorkerSummary: Sendable, Equatable, Codable {
    public var name: String
    public var queues: [String]
    public var kinds: [String]
    public var lastHeartbeat: Date
    /// The operations it runs now.
    public var running: Int

    public init(name: String, queues: [String], kinds: [String], lastHeartbeat: Date, running: Int) {
        self.name = name
        self.queues = queues
        self.kinds = kinds
        self.lastHeartbeat = lastHeartbeat
        self.running = running
    }
}
#endif

#if Durable
extension DurableStoreInspection {
    /// Why the operation is not running, in a sentence (as ``DurableHandle/waitDescription``
    /// says it); nil when it is not stored.
    public func waitDescription(of id: DurableOperationID) async throws -> String? {
        try await waitFacts(of: id).map(DurableWaitDescription.describe)
    }
}
#endif

#if Durable
/// The body's result, or a ``DurableError`` (`.databaseUnreachable`) once `duration` has
/// passed, even when the body does not end on cancellation: for reads a tool may give up on.
package func withReadDeadline<T: Sendable>(
    _ duration: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withDeadline(duration, what, body)
}
#endif
