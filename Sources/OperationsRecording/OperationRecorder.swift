@_spi(Engine) import Operations
import OperationsComposition

/// Records what happens on one or more queues, for a span of time, into a ``Recording``.
///
/// ```swift
/// let recorder = OperationRecorder(title: "Image pipeline")
/// recorder.record(queue)
/// // … add operations, wait …
/// let recording = recorder.stop()
/// try recording.html().write(to: url, atomically: true, encoding: .utf8)
/// ```
///
/// It listens with `OperationQueue.addEventHandler(_:)` and does little per event (a
/// time, under a short lock); names and dependencies are read at ``stop()``. Operations are
/// kept alive until then.
public final class OperationRecorder: Sendable {
    /// Names the row an operation is drawn in when a timeline groups operations: by default
    /// its name with every number replaced by `#` ("image 3: sepia" → "image #: sepia").
    public typealias Grouping = @Sendable (_ operationName: String, _ queueName: String) -> String

    /// The default ``Grouping``.
    public static let groupByNameWithoutNumbers: Grouping = { name, _ in
        name.replacing(/[0-9]+/, with: "#")
    }

    private let title: String
    private let grouping: Grouping
    private let state: RecorderState
    /// A test seam: runs between subscribing to a queue and looking at its operations.
    package let _afterSubscribing = Locked<(@Sendable () -> Void)?>(nil)

    /// A recorder; nothing is recorded until `record(_:)`.
    public init(title: String, grouping: @escaping Grouping = OperationRecorder.groupByNameWithoutNumbers) {
        self.title = title
        self.grouping = grouping
        state = RecorderState(origin: DispatchTime.now().uptimeNanoseconds)
    }

    /// Records the events of `queue` from now on, until ``stop()``. Operations already in
    /// the queue are recorded too, from now (one already running shows no start).
    public func record(_ queue: OperationQueue) {
        record(queue, name: queue.name ?? "queue")
    }

    /// Records a group's children (they run on the group's own queue), in a row of their
    /// own named after the group: "name children".
    public func record(_ group: GroupOperation) {
        record(group.childQueue, name: "\(group.name ?? "group") children")
    }

    /// Records a retry's attempts (they run on the retry's own queue), in a row of their
    /// own named after the retry: "name attempts".
    public func record<Success>(attemptsOf retry: RetryOperation<Success>) {
        record(retry.attemptQueue, name: "\(retry.name ?? "retry") attempts")
    }

    private func record(_ queue: OperationQueue, name queueName: String) {
        let index = state.addQueue(queue, name: queueName)
        let subscription = queue.addEventHandler { [state] event in
            state.record(event, queue: index, queueName: queueName)
        }
        state.keep(subscription)
        _afterSubscribing.withLock { $0 }?()
        // After subscribing: an operation that has an event meanwhile is entered once, by
        // whichever comes first (an event, or this look at the queue).
        let now = DispatchTime.now().uptimeNanoseconds
        for operation in queue.operations {
            state.found(operation, queue: index, queueName: queueName, time: now)
        }
    }

    /// Runs `body`, a stretch of work inside `operation` (one block of a BlockOperation),
    /// and records when it began and ended: the timeline draws it as a bar of its own under
    /// the operation's row, so that parts running at once are seen overlapping.
    ///
    /// - Note: Capture `operation` weakly or unowned in its own blocks: they keep it alive.
    public func recordPart<Result>(_ name: String, of operation: Operation, _ body: () throws -> Result) rethrows -> Result {
        let started = DispatchTime.now().uptimeNanoseconds
        defer { state.recordPart(name, of: operation, started: started, finished: DispatchTime.now().uptimeNanoseconds) }
        return try body()
    }

    /// Stops recording and returns what was recorded. Later calls return an empty recording.
    public func stop() -> Recording {
        state.stop(title: title, grouping: grouping)
    }
}
