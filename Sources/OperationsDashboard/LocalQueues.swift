// The in-process queues a dashboard shows: their recent operations, from the events the
// queues already publish, and the stall reports that name them.
#if Dashboard
import Dispatch
@_spi(Engine) import Operations

/// The queues one dashboard watches, each with its recent timeline.
final class LocalQueues: Sendable {
    /// One watched queue.
    private final class Watched: Sendable {
        let queue: OperationQueue
        let subscription: OperationEventSubscription
        let timeline: TimelineBox

        init(queue: OperationQueue, subscription: OperationEventSubscription, timeline: TimelineBox) {
            self.queue = queue
            self.subscription = subscription
            self.timeline = timeline
        }
    }

    /// A queue's timeline, shared by its event handler and the readers.
    private final class TimelineBox: Sendable {
        let state: Locked<Timeline>

        init(_ timeline: Timeline) {
            state = Locked(timeline)
        }
    }

    /// The last operations of a queue, oldest first; at most `capacity`. An operation is
    /// known by its identity only from its enqueue to its finish (the queue holds it until
    /// then); its entry has a number of its own, since a later operation may take its address.
    struct Timeline: Sendable {
        let origin: UInt64
        let capacity: Int
        var nextNumber = 0
        var live: [ObjectIdentifier: Int] = [:]
        var order: [Int] = []
        var entries: [Int: TimelineEntryJSON] = [:]

        /// `name`: the operation's, read by the caller before the lock (an overridden getter
        /// is user code); used for an enqueue only.
        mutating func apply(_ event: OperationEvent, name: String) {
            let id = ObjectIdentifier(event.operation)
            let seconds = Double(event.time &- origin) / 1e9
            switch event.kind {
            case .enqueued:
                nextNumber += 1
                live[id] = nextNumber
                order.append(nextNumber)
                if order.count > capacity { entries[order.removeFirst()] = nil }
                entries[nextNumber] = TimelineEntryJSON(
                    name: name, enqueued: seconds, started: nil,
                    finished: nil, slot: nil, cancelled: false)
            case .started:
                guard let number = live[id] else { return }
                entries[number]?.started = seconds
                entries[number]?.slot = event.slot
            case .cancelled:
                guard let number = live[id] else { return }
                entries[number]?.cancelled = true
            case .finished(let wasCancelled):
                guard let number = live.removeValue(forKey: id) else { return }
                entries[number]?.finished = seconds
                if wasCancelled { entries[number]?.cancelled = true }
            }
        }

        var json: [TimelineEntryJSON] { order.compactMap { entries[$0] } }
    }

    private let watched = Locked<[Watched]>([])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Starts watching `queue` (again: nothing new).
    func watch(_ queue: OperationQueue) {
        StallLog.shared.install()
        guard !watched.withLock({ list in list.contains { $0.queue === queue } }) else { return }
        let timeline = TimelineBox(Timeline(origin: DispatchTime.now().uptimeNanoseconds, capacity: capacity))
        let subscription = queue.addEventHandler { event in
            let name: String
            if case .enqueued = event.kind {
                name = event.operation.name ?? "\(type(of: event.operation))"
            } else {
                name = ""
            }
            timeline.state.withLock { $0.apply(event, name: name) }
        }
        let entry = Watched(queue: queue, subscription: subscription, timeline: timeline)
        // Two calls at once both subscribe; the one that comes second to the list withdraws.
        let added = watched.withLock { list in
            guard !list.contains(where: { $0.queue === queue }) else { return false }
            list.append(entry)
            return true
        }
        if !added { subscription.cancel() }
    }

    /// Stops watching every queue.
    func stopAll() {
        let all = watched.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for entry in all { entry.subscription.cancel() }
    }

    var json: [LocalQueueJSON] {
        let all = watched.withLock { $0 }
        let stalls = StallLog.shared.messages
        return all.map { entry in
            let queue = entry.queue
            let name = queue.name ?? "queue"
            return LocalQueueJSON(
                name: name, limit: queue.maxConcurrentOperationCount, suspended: queue.isSuspended,
                operationCount: queue.operationCount,
                waitDescription: queue.waitDescription.split(separator: "\n").map(String.init),
                timeline: entry.timeline.state.withLock { $0.json },
                stalls: stalls.filter { $0.contains("\"\(name)\"") })
        }
    }
}

/// The stall reports of this process, newest last: the dashboard chains itself to the
/// diagnostics handler once (the handler installed before it is still called).
final class StallLog: Sendable {
    static let shared = StallLog()

    private let state = Locked<(installed: Bool, messages: [String])>((false, []))
    private let keep = 50

    func install() {
        let first = state.withLock { state in
            defer { state.installed = true }
            return !state.installed
        }
        guard first else { return }
        let previous = OperationDiagnostic.handler
        OperationDiagnostic.handler = { [self] diagnostic in
            if diagnostic.kind == .stall { record(diagnostic.message) }
            previous(diagnostic)
        }
    }

    private func record(_ message: String) {
        state.withLock { state in
            state.messages.append(message)
            if state.messages.count > keep { state.messages.removeFirst(state.messages.count - keep) }
        }
    }

    var messages: [String] { state.withLock { $0.messages } }
}
#endif
