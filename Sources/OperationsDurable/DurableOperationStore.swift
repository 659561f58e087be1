// The store protocol: everything the durable layer asks of a database.
#if Durable

import Foundation

/// The identifier of a stored operation.
public struct DurableOperationID: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public let rawValue: Int64

    public init(rawValue: Int64) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "durable operation \(rawValue)" }
}

/// Where a stored operation is in its life.
public enum DurableState: String, Sendable, Codable {
    /// Some dependency has not finished.
    case waiting
    /// Claimable (once its `notBefore` has passed).
    case ready
    /// Claimed by a worker, which holds a lease on it.
    case running
    case succeeded
    case failed
    case cancelled

    /// Whether the operation is finished for good.
    public var isFinished: Bool { self == .succeeded || self == .failed || self == .cancelled }
}

/// One new operation, as the store receives it.
public struct DurableEnqueueRequest: Sendable {
    public var queue: String
    public var kind: String
    /// The input, encoded as JSON.
    public var input: String
    /// `Operation.QueuePriority`'s raw value: larger first.
    public var priority: Int
    public var key: String?
    public var notBefore: Date?
    /// `Int.max`: retried until it succeeds.
    public var maximumAttempts: Int
    /// The waits, in seconds, listed when the operation was added: element `i` after failure
    /// `i + 1`. After them, ``retryBackoff`` (see ``DurableBackoff/seconds(afterFailure:listed:fraction:)``).
    public var retryDelays: [Double]
    /// The waits after the listed ones, computed by the store when an attempt fails.
    public var retryBackoff: DurableBackoff
    public var dependencies: [DurableOperationID]
    /// Dependencies on requests of the same ``DurableOperationStore/enqueue(_:)`` call, by
    /// their positions in it: each earlier than this request's own.
    public var dependenciesInBatch: [Int]
    /// Runs even when a dependency failed or was cancelled.
    public var runsAnyway: Bool

    public init(
        queue: String, kind: String, input: String, priority: Int = 0, key: String? = nil,
        notBefore: Date? = nil, maximumAttempts: Int = 1, retryDelays: [Double] = [], retryBackoff: DurableBackoff = .none,
        dependencies: [DurableOperationID] = [], dependenciesInBatch: [Int] = [], runsAnyway: Bool = false
    ) {
        self.queue = queue
        self.kind = kind
        self.input = input
        self.priority = priority
        self.key = key
        self.notBefore = notBefore
        self.maximumAttempts = maximumAttempts
        self.retryDelays = retryDelays
        self.retryBackoff = retryBackoff
        self.dependencies = dependencies
        self.dependenciesInBatch = dependenciesInBatch
        self.runsAnyway = runsAnyway
    }
}

/// What the store did with one request.
public struct DurableEnqueueResult: Sendable, Equatable {
    public var id: DurableOperationID
    /// An operation with the same key was pending or running: `id` is that one's.
    public var coalesced: Bool

    public init(id: DurableOperationID, coalesced: Bool) {
        self.id = id
        self.coalesced = coalesced
    }
}

/// An operation a worker claimed: one attempt to run.
public struct DurableClaim: Sendable {
    public var id: DurableOperationID
    public var kind: String
    public var input: String
    public var attempt: Int
    /// The operations it depends on (for the worker's events: tracing links to their spans).
    public var dependencies: [DurableOperationID]
    /// How many attempts it has in all (`nil`: the store does not say); the worker's events
    /// tell a failure that will be retried from a final one by it.
    public var maximumAttempts: Int?

    public init(
        id: DurableOperationID, kind: String, input: String, attempt: Int, dependencies: [DurableOperationID] = [],
        maximumAttempts: Int? = nil
    ) {
        self.id = id
        self.kind = kind
        self.input = input
        self.attempt = attempt
        self.dependencies = dependencies
        self.maximumAttempts = maximumAttempts
    }
}

/// How one attempt ended.
public enum DurableAttemptResult: Sendable {
    /// The output, encoded as JSON.
    case succeeded(output: String)
    /// Retried while attempts remain, unless a cancel was requested.
    case failed(error: String)
    case cancelled(reason: String)
    /// Failed without retry: its input does not decode, its output does not encode.
    case rejected(error: String)
}

/// The end of one attempt, as a worker reports it.
public struct DurableCompletion: Sendable {
    public var id: DurableOperationID
    public var attempt: Int
    public var result: DurableAttemptResult

    public init(id: DurableOperationID, attempt: Int, result: DurableAttemptResult) {
        self.id = id
        self.attempt = attempt
        self.result = result
    }
}

/// One recorded run of an operation's body.
public struct DurableAttempt: Sendable, Codable, Equatable {
    public var number: Int
    public var worker: String
    public var start: Date
    public var end: Date?
    /// Why the attempt did not succeed, if it ended otherwise.
    public var error: String?

    public init(number: Int, worker: String, start: Date, end: Date?, error: String?) {
        self.number = number
        self.worker = worker
        self.start = start
        self.end = end
        self.error = error
    }
}

/// A stored operation as read back.
public struct DurableRecord: Sendable {
    public var id: DurableOperationID
    public var queue: String
    public var kind: String
    public var state: DurableState
    /// The last attempt's number (0 before the first).
    public var attempt: Int
    public var maximumAttempts: Int
    public var output: String?
    public var error: String?
    public var cancelReason: String?
    public var progressCompleted: Int64
    public var progressTotal: Int64
    public var notBefore: Date
    public var unfinishedDependencies: Int
    /// Filled when asked for.
    public var attempts: [DurableAttempt]

    public init(
        id: DurableOperationID, queue: String, kind: String, state: DurableState, attempt: Int,
        maximumAttempts: Int, output: String?, error: String?, cancelReason: String?,
        progressCompleted: Int64, progressTotal: Int64, notBefore: Date, unfinishedDependencies: Int,
        attempts: [DurableAttempt]
    ) {
        self.id = id
        self.queue = queue
        self.kind = kind
        self.state = state
        self.attempt = attempt
        self.maximumAttempts = maximumAttempts
        self.output = output
        self.error = error
        self.cancelReason = cancelReason
        self.progressCompleted = progressCompleted
        self.progressTotal = progressTotal
        self.notBefore = notBefore
        self.unfinishedDependencies = unfinishedDependencies
        self.attempts = attempts
    }
}

/// What the store knows about why an operation is not running (for `waitDescription`).
public struct DurableWaitFacts: Sendable {
    public var record: DurableRecord
    public var queueSuspended: Bool
    public var queueLimit: Int?
    public var queueRunning: Int
    /// Whether a live worker (heartbeating) serves this queue and kind.
    public var liveWorkerKnowsKind: Bool
    public var now: Date

    public init(
        record: DurableRecord, queueSuspended: Bool, queueLimit: Int?, queueRunning: Int,
        liveWorkerKnowsKind: Bool, now: Date
    ) {
        self.record = record
        self.queueSuspended = queueSuspended
        self.queueLimit = queueLimit
        self.queueRunning = queueRunning
        self.liveWorkerKnowsKind = liveWorkerKnowsKind
        self.now = now
    }
}

/// One attempt of an operation: what a give-back names, so that it never ends a later attempt
/// of the same operation.
public struct DurableAttemptID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var operation: DurableOperationID
    public var attempt: Int

    public init(operation: DurableOperationID, attempt: Int) {
        self.operation = operation
        self.attempt = attempt
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.operation, lhs.attempt) < (rhs.operation, rhs.attempt)
    }

    public var description: String { "attempt \(attempt) of \(operation)" }
}

/// What a heartbeat learnt.
public struct DurableHeartbeat: Sendable {
    /// The operations the worker still holds (a lease the store took back is missing).
    public var held: Set<DurableOperationID>
    /// Held operations whose cancel was requested, with the reason.
    public var cancelRequested: [DurableOperationID: String]
    /// Running attempts leased to the worker whose operations it did not name: claims whose
    /// answer it never received (or results it dropped). Their leases are not renewed.
    public var unnamed: Set<DurableAttemptID>

    public init(
        held: Set<DurableOperationID>, cancelRequested: [DurableOperationID: String], unnamed: Set<DurableAttemptID> = []
    ) {
        self.held = held
        self.cancelRequested = cancelRequested
        self.unnamed = unnamed
    }
}

/// How many operations of a queue are in each state.
public struct DurableOperationCounts: Sendable, Equatable, Codable {
    public var waiting = 0
    public var ready = 0
    public var running = 0
    public var succeeded = 0
    public var failed = 0
    public var cancelled = 0

    public init() {}

    /// The operations that have not finished: waiting, ready and running.
    public var unfinished: Int { waiting + ready + running }

    public subscript(state: DurableState) -> Int {
        get {
            switch state {
            case .waiting: waiting
            case .ready: ready
            case .running: running
            case .succeeded: succeeded
            case .failed: failed
            case .cancelled: cancelled
            }
        }
        set {
            switch state {
            case .waiting: waiting = newValue
            case .ready: ready = newValue
            case .running: running = newValue
            case .succeeded: succeeded = newValue
            case .failed: failed = newValue
            case .cancelled: cancelled = newValue
            }
        }
    }
}

/// A change the store tells its listeners about (through NOTIFY, or by watching the file).
public enum DurableStoreNotification: Sendable, Equatable {
    /// Some operation of the queue became claimable.
    case workAvailable(queue: String)
    case finished(DurableOperationID)
    case cancelRequested(DurableOperationID)
    /// Notifications may have been missed (a reconnect): listeners look again.
    case resynchronize
}

/// A database that stores durable operations.
///
/// Each method is one transaction. The durable layer (`DurableQueue`, `DurableHandle`,
/// `DurableWorker`) reaches the database only through this protocol, so that a store for
/// another database runs the same tests.
public protocol DurableOperationStore: Sendable {
    /// Creates or upgrades the schema; safe to call from several processes at once.
    func migrate() async throws

    /// Throws a ``DurableError`` saying where the database is when it cannot be reached.
    func checkConnection() async throws

    /// Stores new operations in one transaction, in order: a request depends on stored
    /// operations by id and on earlier requests of the same call by position
    /// (``DurableEnqueueRequest/dependenciesInBatch``). A request whose key coalesces with a
    /// pending operation stands for that operation in the batch's dependencies.
    func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult]

    /// Claims up to `limit` ready operations of `queue` whose kind is in `kinds`, in priority
    /// then insertion order, within the queue's cluster-wide limit; records an attempt each.
    func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim]

    /// Records the end of attempts the worker holds; an attempt whose lease was taken back is
    /// ignored. Releases dependents, schedules retries, cancels dependents of failures.
    func complete(_ completions: [DurableCompletion], worker: String) async throws

    /// Records the end of attempts as ``complete(_:worker:)`` does, then claims up to `limit`
    /// operations of `queue` as ``claim(queue:kinds:worker:limit:lease:)`` does, in one
    /// transaction and one round trip: a worker's slots freed by the ends are filled again by
    /// the same call.
    func completeAndClaim(
        _ completions: [DurableCompletion], worker: String, queue: String, kinds: [String], limit: Int, lease: Duration
    ) async throws -> [DurableClaim]

    /// Hands back held attempts unfinished (the worker is stopping, or does not run them); each
    /// is recorded with `reason` and does not count against the maximum. An attempt that is no
    /// longer the operation's current one, or no longer the worker's, is left alone.
    func giveBack(_ attempts: [DurableAttemptID], worker: String, reason: String) async throws

    /// Hands back every attempt the worker still holds, as ``giveBack(_:worker:reason:)``
    /// does: the last call of a worker that stops, for what it holds without knowing it (a
    /// claim whose answer it never got) and results it could not record.
    func giveBackAll(worker: String, reason: String) async throws

    /// Renews the worker's leases on the operations it is running (`holding`) and says which
    /// it still holds and which were cancelled. A lease the worker holds but does not name
    /// (a claim whose answer it never got) is not renewed, and is reported as `unnamed`.
    func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat

    /// Takes back operations whose lease expired: ready again, or failed when no attempt is
    /// left. Returns how many.
    func rescueExpiredLeases() async throws -> Int

    func record(of id: DurableOperationID, includingAttempts: Bool) async throws -> DurableRecord?

    func waitFacts(of id: DurableOperationID) async throws -> DurableWaitFacts?

    /// The states of the operations among `ids` that are stored, in one read.
    func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState]

    /// The records (without attempts) of the operations among `ids` that are stored, in one read.
    func records(of ids: [DurableOperationID]) async throws -> [DurableRecord]

    /// How many operations of the queue are in each state. The unfinished ones are counted
    /// from indexes; the finished ones by reading the queue's kept rows (until pruned).
    func counts(queue: String) async throws -> DurableOperationCounts

    /// The unfinished operations of the queue (waiting, ready, running), read from indexes.
    func unfinishedCount(queue: String) async throws -> Int

    /// Cancels a pending operation at once (and its dependents); asks a running one to stop.
    func cancel(_ id: DurableOperationID, reason: String) async throws

    func cancelAll(queue: String, reason: String) async throws

    func reportProgress(of id: DurableOperationID, attempt: Int, completed: Int64, total: Int64) async throws

    func setMaxConcurrentOperationCount(_ count: Int?, queue: String) async throws
    func maxConcurrentOperationCount(queue: String) async throws -> Int?
    func setSuspended(_ suspended: Bool, queue: String) async throws
    func isSuspended(queue: String) async throws -> Bool

    /// Deletes up to `limit` operations finished before `date`, with their attempts and edges.
    func prune(finishedBefore date: Date, limit: Int) async throws -> Int

    /// Changes as they happen, from now on. Ends when the caller stops iterating.
    func notifications() -> AsyncStream<DurableStoreNotification>

    /// The one watch through which this process waits for the store's operations to finish
    /// (``DurableHandle/value``, ``DurableQueue/waitUntilFinished(_:)``): a store keeps one
    /// for its life.
    var finishWatch: DurableFinishWatch { get }
}

extension DurableOperationStore {
    /// Two calls: for stores that cannot do both in one transaction.
    public func completeAndClaim(
        _ completions: [DurableCompletion], worker: String, queue: String, kinds: [String], limit: Int, lease: Duration
    ) async throws -> [DurableClaim] {
        try await complete(completions, worker: worker)
        return try await claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease)
    }

    /// Reads the records one by one: for stores that cannot read many at once.
    public func records(of ids: [DurableOperationID]) async throws -> [DurableRecord] {
        var records: [DurableRecord] = []
        for id in ids {
            if let record = try await record(of: id, includingAttempts: false) { records.append(record) }
        }
        return records
    }

    /// Reads the records one by one: for stores that cannot read many at once.
    public func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState] {
        var states: [DurableOperationID: DurableState] = [:]
        for id in ids {
            if let record = try await record(of: id, includingAttempts: false) { states[id] = record.state }
        }
        return states
    }

    public func unfinishedCount(queue: String) async throws -> Int {
        try await counts(queue: queue).unfinished
    }
}
#endif
