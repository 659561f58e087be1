import Operations

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

    /// A recorder; nothing is recorded until ``record(_:)``.
    public init(title: String, grouping: @escaping Grouping = OperationRecorder.groupByNameWithoutNumbers) {
        self.title = title
        self.grouping = grouping
        state = RecorderState(origin: DispatchTime.now().uptimeNanoseconds)
    }

    /// Records the events of `queue` from now on, until ``stop()``.
    public func record(_ queue: OperationQueue) {
        let queueName = queue.name ?? "queue"
        let index = state.addQueue(queue, name: queueName)
        let subscription = queue.addEventHandler { [state] event in
            if case .enqueued = event.kind {
                state.enqueued(event.operation, queue: index, queueName: queueName, time: event.time)
            } else {
                state.record(event)
            }
        }
        state.keep(subscription)
    }

    /// Stops recording and returns what was recorded. Later calls return an empty recording.
    public func stop() -> Recording {
        state.stop(title: title, grouping: grouping)
    }
}
