import Operations

/// Records what ran when on a set of queues, through `OperationQueue.addEventHandler`:
/// one bar per operation from start to finish, in the lane of the worker slot that ran it.
public final class Timeline: Sendable {
    public enum Outcome: String, Sendable {
        case finished, cancelled, failed, unfinished
    }

    public struct Bar: Sendable {
        public var name: String
        public var queue: String
        public var lane: Int
        /// The queue's worker slot that ran it.
        public var slot: Int
        public var enqueued: UInt64
        public var start: UInt64?
        public var end: UInt64?
        public var outcome: Outcome
        public var dependencies: [ObjectIdentifier]
        public var thread: UInt64?
    }

    public let title: String
    private let state = TimelineState()
    private let subscriptions = Protected<[OperationEventSubscription]>()
    /// Operations that report failure (for the colour of their bar).
    private let failures = Protected<Set<ObjectIdentifier>>([])

    public init(title: String) {
        self.title = title
    }

    /// Records the events of `queue` from now on.
    public func watch(_ queue: OperationQueue) {
        let name = queue.name ?? "queue"
        subscriptions.append(queue.addEventHandler { [state] event in state.record(event, queueName: name) })
    }

    /// Marks an operation as failed (its bar is drawn red).
    public func markFailed(_ operation: Operation) { failures.withLock { _ = $0.insert(ObjectIdentifier(operation)) } }

    /// Stops recording and returns the bars with their lanes, and the time of the first
    /// event. Lanes show concurrency: each queue's bars are packed into as few lanes as
    /// overlap (an asynchronous operation outlives the worker that started it, so worker
    /// slots alone would draw overlapping bars on one line).
    public func finish() -> (bars: [Bar], identities: [ObjectIdentifier], origin: UInt64) {
        let subscribed = subscriptions.withLock { list in
            defer { list = [] }
            return list
        }
        for subscription in subscribed { subscription.cancel() }
        let failed = failures.current
        var (bars, identities) = state.snapshot()
        for index in bars.indices where failed.contains(identities[index]) { bars[index].outcome = .failed }
        var queueOrder: [String] = []
        for bar in bars where bar.start != nil && !queueOrder.contains(bar.queue) { queueOrder.append(bar.queue) }
        var nextLane = 0
        for queue in queueOrder {
            var laneEnds: [UInt64] = []
            let indices = bars.indices.filter { bars[$0].queue == queue && bars[$0].start != nil }
                .sorted { bars[$0].start! < bars[$1].start! }
            for index in indices {
                let start = bars[index].start!, end = bars[index].end ?? start
                if let free = laneEnds.firstIndex(where: { $0 <= start }) {
                    laneEnds[free] = end
                    bars[index].lane = nextLane + free
                } else {
                    laneEnds.append(end)
                    bars[index].lane = nextLane + laneEnds.count - 1
                }
            }
            nextLane += laneEnds.count
        }
        let origin = bars.map(\.enqueued).min() ?? 0
        return (bars, identities, origin)
    }
}

/// The bars being recorded.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class TimelineState: @unchecked Sendable {
    private let lock = NSLock()
    private var bars: [ObjectIdentifier: Timeline.Bar] = [:]
    private var order: [ObjectIdentifier] = []
    private var lanes: [String: Int] = [:]
    /// Keeps recorded operations alive, so that an identity is never reused by a new
    /// operation at the same address while the timeline records.
    private var retained: [Operation] = []

    func record(_ event: OperationEvent, queueName: String) {
        let identity = ObjectIdentifier(event.operation)
        // Read what needs the operation (user code) before the lock.
        let name = event.operation.name ?? "\(type(of: event.operation))"
        let dependencies = event.kind == .enqueued ? event.operation.dependencies.map(ObjectIdentifier.init) : []
        lock.withLock {
            switch event.kind {
            case .enqueued:
                bars[identity] = Timeline.Bar(
                    name: name, queue: queueName, lane: 0, slot: 0, enqueued: event.time, start: nil, end: nil,
                    outcome: .unfinished, dependencies: dependencies, thread: nil)
                order.append(identity)
                retained.append(event.operation)
            case .started:
                let laneKey = "\(queueName)#\(event.slot ?? 0)"
                let lane = lanes[laneKey] ?? lanes.count
                lanes[laneKey] = lane
                bars[identity]?.start = event.time
                bars[identity]?.lane = lane
                bars[identity]?.slot = event.slot ?? 0
                bars[identity]?.thread = event.thread
            case .cancelled:
                break
            case .finished(let wasCancelled):
                bars[identity]?.end = event.time
                if bars[identity]?.start == nil { bars[identity]?.start = event.time }
                bars[identity]?.outcome = wasCancelled ? .cancelled : .finished
            }
        }
    }

    func snapshot() -> ([Timeline.Bar], [ObjectIdentifier]) {
        lock.withLock {
            defer { retained = [] }
            return (order.compactMap { bars[$0] }, order.filter { bars[$0] != nil })
        }
    }
}

